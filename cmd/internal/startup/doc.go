// Package startup is the start-up every binary's app.Run shares: the logger
// (the caller's, or one from the binary's own -v/--vmodule flags), the client
// config from --kubeconfig or the in-cluster config, and the environment an
// in-process caller hands in. It holds no process-global state; only Main,
// which is a binary's whole main function, sets controller-runtime's global
// logger.
package startup
