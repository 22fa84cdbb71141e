// Copyright The computedomain-operator Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

// Package startup is the start-up every binary's app.Run shares: the logger
// (the caller's, or one from the binary's own -v/--vmodule flags), the client
// config from --kubeconfig or the in-cluster config, and the environment an
// in-process caller hands in. It holds no process-global state; only Main,
// which is a binary's whole main function, sets controller-runtime's global
// logger.
package startup
