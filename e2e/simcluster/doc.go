// Package simcluster runs a Kubernetes cluster made of the real control-plane
// components (embedded etcd, kube-apiserver, kube-scheduler and the
// kube-controller-manager controllers a GPU cluster needs) inside one process,
// with simulated GPU nodes: Node objects with heartbeats, a node agent in the
// kubelet's role (package nodeagent) and the DRA kubelet plugin of each node
// started in-process with its own host root.
//
// The feature gates of the control plane are process-global, so one process
// runs one cluster at a time.
package simcluster
