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

package topologyview

// Racks is the racks view: one Clique per NVLink clique (rack), its trays, and the holders of their GPUs.
type Racks struct {
	// Cliques are sorted by ID; trays without the clique label form the clique with the empty ID, last.
	Cliques []Clique `json:"cliques"`
	// Holders are the domains and other workloads that hold trays of the shown cliques, each with the key
	// the text view prints in its cells, sorted by kind, namespace and name.
	Holders []Holder `json:"holders"`
	// FreeTrays and TotalTrays count the shown cliques' trays.
	FreeTrays  int `json:"freeTrays"`
	TotalTrays int `json:"totalTrays"`
}

// Clique is one NVLink clique (rack) and its trays.
type Clique struct {
	// ID is the clique label's value, `<clusterUUID>.<cliqueId>`; empty for nodes without the label.
	ID         string `json:"id"`
	Trays      []Tray `json:"trays"`
	FreeTrays  int    `json:"freeTrays"`
	TotalTrays int    `json:"totalTrays"`
}

// IMEX daemon states of a tray.
const (
	IMEXReady    = "Ready"
	IMEXNotReady = "NotReady"
	// IMEXMissing: the node is in a clique but no IMEXNode reports for it.
	IMEXMissing = "Missing"
	// IMEXNone: the node has no clique, so no IMEX daemon runs there.
	IMEXNone = "None"
)

// Tray is one node (a GB200 compute tray) of a clique.
type Tray struct {
	Node string `json:"node"`
	// GPUs is the number of GPUs the node's gpu.nvidia.com ResourceSlices publish; UnhealthyGPUs of them carry
	// a NoSchedule or NoExecute device taint.
	GPUs          int `json:"gpus"`
	UnhealthyGPUs int `json:"unhealthyGPUs,omitempty"`
	// UnhealthyReasons name each unhealthy GPU and its taints ("gpu-1: gpu.nvidia.com/xid=48:NoSchedule").
	UnhealthyReasons []string `json:"unhealthyReasons,omitempty"`
	// Cordoned is the Node's spec.unschedulable.
	Cordoned bool `json:"cordoned,omitempty"`
	// Taints are the Node's NoSchedule and NoExecute taints (the cordon's own taint left out), key=value:effect.
	Taints []string `json:"taints,omitempty"`
	// IMEX is the state of the node's IMEX daemon: Ready, NotReady, Missing or None.
	IMEX string `json:"imex"`
	// IMEXMessage says why the daemon is not ready (its IMEXNode's False conditions).
	IMEXMessage string `json:"imexMessage,omitempty"`
	// Holders are the domains and workloads that hold the node's GPUs or its IMEX membership, sorted like
	// Racks.Holders.
	Holders []TrayHolder `json:"holders,omitempty"`
	// Free is true when nothing holds the tray and it can take work: not cordoned, no NoSchedule or
	// NoExecute taint, every GPU healthy, and its IMEX daemon ready (or no clique).
	Free bool `json:"free"`
}

// Holder kinds.
const (
	HolderComputeDomain = "ComputeDomain"
	HolderPod           = "Pod"
	// HolderResourceClaim: an allocated GPU claim that no pod has reserved.
	HolderResourceClaim = "ResourceClaim"
)

// Holder is a domain or another workload holding trays.
type Holder struct {
	// Key is the short cell label the text view prints (A, B, ..., Z, AA, AB, ...), in the order of Holders.
	Key       string `json:"key"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Trays is the number of shown trays it holds.
	Trays int `json:"trays"`
	// Color is its fill in the SVG picture, derived from kind, namespace and name alone, so a domain keeps its
	// color from one picture to the next.
	Color string `json:"color"`
}

// TrayHolder is one holder of a tray and how many of the tray's GPUs it holds (0: only its IMEX membership, a
// domain's node without a GPU claim).
type TrayHolder struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	GPUs      int    `json:"gpus"`
}

// Ref is "namespace/name", how the views name a holder.
func (h Holder) Ref() string { return h.Namespace + "/" + h.Name }
