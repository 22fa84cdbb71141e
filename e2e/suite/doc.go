// Package suite is the end-to-end suite: user stories run against the
// simulated cluster (default) or any cluster named by E2E_KUBECONFIG.
package suite
