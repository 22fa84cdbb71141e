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

// Package simcluster runs a Kubernetes cluster made of the real components
// inside one process, with simulated GPU nodes:
//
//   - control plane: embedded etcd, kube-apiserver (resource.k8s.io/v1,
//     scheduling.k8s.io/v1beta1, v1alpha3 and the gates in WorkloadGates unless
//     Config.DisableWorkloadAPI), kube-scheduler, and the
//     kube-controller-manager controllers in Controllers (resourceclaim,
//     daemonset, deployment, replicaset, job, garbage collector, node
//     lifecycle, ...), each started through its own cmd/.../app package;
//   - nodes (package topology for the shape): a Node with capacity, labels
//     (hostname, the clique the mock NVML reports) and a loopback address
//     127.0.A.B (its pods get 127.A.B.x), a host root <Dir>/n/<node> with the mock's fake /dev, /proc
//     and /sys, and a node agent (package nodeagent) in the kubelet's role;
//   - the operator, installed as a user would, with the Helm SDK from
//     charts/computedomain-operator (release ReleaseName in
//     OperatorNamespace; values: the chart's defaults but for mock NVML read
//     from each node's machine file MockMachineFile, Config.ComputeDomains
//     for the controller and the compute-domain plugin, Config.ChartValues
//     over them; UpgradeOperator runs `helm upgrade`). The node agents run
//     the chart's pods: a container of OperatorImageRepository (any tag) runs
//     the binary its command names (Binaries) in-process, with its args,
//     environment (downward API included) and host-path mounts mapped onto
//     the node's root, listen addresses on the pod's IP, and the in-cluster
//     configuration of its pod's node-bound service account token, so the
//     chart's RBAC and admission policies apply. The chart's long-lived IMEX
//     daemon pods are of the same image; their daemon runs a stand-in IMEX
//     whose peer links and command port are in-memory connections with TCP's
//     behavior (standin.MemoryNetwork: one per process, as the loopback
//     network is), so a node costs no file descriptor per clique peer. The
//     pods reach the API server through a relay that CutAPIServer can take
//     away; their clients dial it in-process (one client-go transport per
//     container), and only the relay's link to the API server is a socket.
//     Other images stay simulated (Config.Images
//     adds in-process runners). Config.NodeComponents (the test driver)
//     replace the chart's GPU plugin. The webhook (chart value
//     webhook.enabled) runs from its pod too: the API server's egress
//     selector sends its calls to a Service's cluster IP through an HTTP
//     CONNECT proxy that relays them to a ready pod of the Service (there is
//     no kube-proxy, and EndpointSlices refuse loopback pod addresses); the
//     chart's serving certificate comes from the pod's secret volume.
//
// Binaries of this module link Helm's SDK and with it Go's plugin package
// (k8s.io/cli-runtime's resource builder imports kustomize, whose plugin
// loader imports it), which makes the Go linker ask for immediate binding
// (-Wl,-z,now); go-nvml leaves its NVML symbols to be resolved when the
// driver is loaded, so such a binary dies at start ("undefined symbol:
// nvml..."). It needs lazy binding: build and test with
// -ldflags=-extldflags=-Wl,-z,lazy (the Makefile's E2E_GOFLAGS). The flag
// cannot live in the code: the go command refuses -Wl,-z,lazy in a #cgo
// LDFLAGS directive (it is not on its allowlist, and CGO_LDFLAGS_ALLOW is an
// environment variable too), and kustomize's build tag that leaves the
// plugin package out (kustomize_disable_go_plugin_support) is a flag as well.
//
// Start returns when every node is Ready and has published its devices;
// Stop shuts everything down. The control plane's own logs (process-global
// klog) are off unless SIMCLUSTER_KLOG=<verbosity> is set. The feature gates
// are process-global, so one process runs one cluster at a time.
//
// Clusters in different processes on one machine run side by side: Start
// takes a free block of third octets A for the node and pod addresses (and
// etcd) by holding flocks on $TMPDIR/simcluster-addresses-<A>.lock until
// Stop or the process's end, and fails naming the holders when no block is
// free. The IMEX stand-ins' fixed ports thus never collide across clusters.
//
// The command e2e/cmd/simcluster wraps this package (`up`, `demo`,
// `demo-tenants`), the benchmarks of e2e/cmd/bench start it, and the Ginkgo
// suites of e2e/suite, e2e/placement, e2e/noworkloadapi and e2e/kueue run on it.
package simcluster
