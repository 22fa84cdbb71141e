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

// Package nodeagent plays the kubelet's role for one simulated node: it
// registers the Node and keeps its Lease fresh, discovers DRA kubelet plugins
// through the node's plugin registry directory and prepares/unprepares
// ResourceClaims through the kubelet's own DRA manager
// (k8s.io/kubernetes/pkg/kubelet/cm/dra: real gRPC, the kubelet's order,
// checkpoint and 45 s call timeout), resolves the prepared CDI devices against
// the node's CDI directory, records the resulting container edits on the pod,
// and drives pod phases and conditions. Containers do not run: they are
// Running until deleted, or until the run duration of a pod that does not
// restart has elapsed.
//
// Around the manager it follows the kubelet (v1.37): each pod has its own
// worker, so pods of a node are prepared concurrently and calls into one
// plugin are serialized only by the plugin helper; a failed prepare gives the
// pod a Warning event FailedPrepareDynamicResources, leaves its containers
// Waiting in ContainerCreating and is tried again at the pod resync, 60-90 s
// later, or earlier when the pod object changes (Config.FastRetry, for
// unit-speed tests only, retries within seconds); a pod's claims are
// unprepared, also after a failed or partial prepare, before its phase
// becomes terminal and before its object is removed, both held while the
// manager may still need to unprepare; device health from the manager's
// updates is written to containerStatuses[].allocatedResourcesStatus; and
// registration ignores registry files whose names start with "."; an agent
// started again on a node's paths (a kubelet restart) reloads the manager's
// checkpoint and adopts the pods that run there without preparing them again
// (pods with containers of a Runtime image are started again).
//
// Where it is kinder than the kubelet, known and to mend: an httpGet
// readiness probe (the only kind it runs) is asked every 100 ms from the
// container's start until it first succeeds, for at most 30 s, not at the
// probe's periodSeconds and never again after; a container still not ready
// then stays not ready. A restarted container keeps the readiness it had.
package nodeagent
