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

package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ComputeDomainAllocationMode says which IMEX channels a workload claim of the domain receives.
// +kubebuilder:validation:Enum=Single;All
type ComputeDomainAllocationMode string

const (
	// AllocationModeSingle gives each workload claim the one channel of its domain.
	AllocationModeSingle ComputeDomainAllocationMode = "Single"
	// AllocationModeAll gives each workload claim every IMEX channel of its domain's IMEX ensemble on the node.
	// A domain holds one channel per NVLink clique, so that is the same channel as Single; a channel of
	// another domain (another tenant) on the node is never included. NVIDIA's driver gives every channel of
	// the node, which with one channel per domain would cross tenants.
	AllocationModeAll ComputeDomainAllocationMode = "All"
)

// AllocationModes lists the valid allocation modes, in the order error messages show them.
var AllocationModes = []ComputeDomainAllocationMode{AllocationModeSingle, AllocationModeAll}

// ComputeDomainStatusValue is the compatible one-word summary of a domain or of one of its nodes.
// +kubebuilder:validation:Enum=Ready;NotReady
type ComputeDomainStatusValue string

const (
	// ComputeDomainStatusReady means the domain (or node) is ready for workloads.
	ComputeDomainStatusReady ComputeDomainStatusValue = "Ready"
	// ComputeDomainStatusNotReady means the domain (or node) is not ready yet, or no longer.
	ComputeDomainStatusNotReady ComputeDomainStatusValue = "NotReady"
)

// ComputeDomain is a set of nodes whose GPUs share memory over multi-node NVLink (IMEX) for the lifetime
// of a workload. Pods join it through the ResourceClaimTemplate named in spec.channel.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,path=computedomains,singular=computedomain,categories=nvidia
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Ready condition"
// +kubebuilder:printcolumn:name="Nodes-Ready",type=integer,JSONPath=`.status.readyNodes`,description="Nodes whose IMEX daemon is ready"
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.totalNodes`,description="Nodes the domain spans or expects"
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.status`,priority=1,description="Compatible status summary"
// +kubebuilder:printcolumn:name="Placement",type=string,JSONPath=`.status.conditions[?(@.type=="PlacementGuaranteed")].reason`,priority=1,description="How the workload is placed (PlacementGuaranteed reason)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ComputeDomain struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec describes the domain. It is immutable after creation.
	// +required
	Spec ComputeDomainSpec `json:"spec"`

	// status is the observed state of the domain, written by the controller alone.
	// +optional
	Status ComputeDomainStatus `json:"status,omitempty"`
}

// ComputeDomainSpec is the desired state of a ComputeDomain.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
// +kubebuilder:validation:XValidation:rule="!has(self.sliceSize) || self.sliceSize == 0 || (has(self.numNodes) && self.numNodes > 0 && self.numNodes % self.sliceSize == 0)",message="spec.sliceSize must divide spec.numNodes (and needs spec.numNodes); 0 takes the default slice plan"
type ComputeDomainSpec struct {
	// numNodes is the number of nodes the domain is expected to span. 0 means the domain follows its
	// workload and needs no count up front. When set, the domain is Ready once that many nodes are ready.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	NumNodes int32 `json:"numNodes,omitempty"`

	// sliceSize is how many of the domain's spec.numNodes pods share one NVLink clique when the domain is
	// larger than one clique: the workload is placed as spec.numNodes/sliceSize slices of consecutive ranks,
	// each slice's pods in one clique, all slices or none. It must divide spec.numNodes and fit a clique. 0 (the
	// default) takes the fewest slices of equal size that fit a clique (64 nodes on NVL72 racks: 4 slices of 16).
	// Ours, not part of the compatible API.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4096
	SliceSize int32 `json:"sliceSize,omitempty"`

	// channel describes the ResourceClaimTemplate through which workload pods receive the domain's
	// IMEX channel.
	// +required
	Channel ComputeDomainChannelSpec `json:"channel"`
}

// ComputeDomainChannelSpec describes how workloads receive the domain's IMEX channel.
type ComputeDomainChannelSpec struct {
	// resourceClaimTemplate names the ResourceClaimTemplate the controller creates in the domain's
	// namespace; workload pods reference it to join the domain.
	// +required
	ResourceClaimTemplate ComputeDomainResourceClaimTemplate `json:"resourceClaimTemplate"`

	// allocationMode is Single (the domain's one channel, the default) or All (every channel of the domain's
	// IMEX ensemble on the node, which is that same channel; never another domain's).
	// +optional
	// +kubebuilder:default=Single
	AllocationMode ComputeDomainAllocationMode `json:"allocationMode,omitempty"`
}

// ComputeDomainResourceClaimTemplate names the workload ResourceClaimTemplate of a domain.
type ComputeDomainResourceClaimTemplate struct {
	// name is the name of the ResourceClaimTemplate, in the domain's namespace: a DNS subdomain (lower-case
	// letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="must be a DNS subdomain (lower-case letters, digits, '-' and '.', starting and ending with a letter or digit), the name a ResourceClaimTemplate can have"
	Name string `json:"name"`
}

// ComputeDomainStatus is the observed state of a ComputeDomain.
type ComputeDomainStatus struct {
	// status is the compatible summary: Ready or NotReady.
	// +optional
	// +kubebuilder:default=NotReady
	Status ComputeDomainStatusValue `json:"status,omitempty"`

	// nodes lists the nodes of the domain with their IMEX identity.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=4096
	Nodes []ComputeDomainNode `json:"nodes,omitempty"`

	// cliques lists one entry per NVLink clique (rack) the domain spans. Each clique forms its own IMEX
	// ensemble with its own channel.
	// +optional
	// +listType=map
	// +listMapKey=cliqueID
	// +kubebuilder:validation:MaxItems=1024
	Cliques []ComputeDomainClique `json:"cliques,omitempty"`

	// slices lists how the domain's workload is placed when spec.numNodes is set: one slice per clique-sized
	// block of consecutive ranks (a domain that fits one clique has one slice). Ours, not part of the
	// compatible API.
	// +optional
	// +listType=map
	// +listMapKey=index
	// +kubebuilder:validation:MaxItems=4096
	Slices []ComputeDomainSlice `json:"slices,omitempty"`

	// readyNodes is the number of nodes whose IMEX daemon is ready.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ReadyNodes int32 `json:"readyNodes,omitempty"`

	// totalNodes is the number of nodes the domain spans, or spec.numNodes when that is larger.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TotalNodes int32 `json:"totalNodes,omitempty"`

	// conditions are the domain's conditions: Ready, DaemonsReady, Degraded and (ours) PlacementGuaranteed.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the metadata.generation the status was computed from.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// ComputeDomainNode is one node of a ComputeDomain.
type ComputeDomainNode struct {
	// name is the name of the Node.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// ipAddress is the address the node's IMEX daemon listens on for its peers.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	IPAddress string `json:"ipAddress,omitempty"`

	// cliqueID is the node's NVLink clique, `<clusterUUID>.<cliqueId>`; empty when the node has no
	// multi-node NVLink fabric.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	CliqueID string `json:"cliqueID,omitempty"`

	// index is the node's position within its clique's IMEX ensemble.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Index int32 `json:"index,omitempty"`

	// status says whether the node's IMEX daemon is ready.
	// +optional
	// +kubebuilder:default=NotReady
	Status ComputeDomainStatusValue `json:"status,omitempty"`

	// lastReadyTime is when the controller saw this node's IMEX daemon become ready. It is kept while
	// the node stays a member, so a node that was ready and no longer is shows in the Degraded
	// condition, while a node that is still joining does not. Ours, not part of the compatible API.
	// +optional
	LastReadyTime *metav1.Time `json:"lastReadyTime,omitempty"`
}

// ComputeDomainClique is the IMEX ensemble a domain forms within one NVLink clique.
type ComputeDomainClique struct {
	// cliqueID is the NVLink clique, `<clusterUUID>.<cliqueId>`; empty for the domain's nodes that have
	// no multi-node NVLink fabric.
	// +required
	// +kubebuilder:validation:MaxLength=256
	CliqueID string `json:"cliqueID"`

	// channel is the IMEX channel the domain holds in this clique; unset until one is allocated.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2047
	Channel *int32 `json:"channel,omitempty"`

	// readyNodes is the number of the clique's nodes whose IMEX daemon is ready.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ReadyNodes int32 `json:"readyNodes,omitempty"`

	// totalNodes is the number of the domain's nodes in this clique.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TotalNodes int32 `json:"totalNodes,omitempty"`
}

// ComputeDomainSlice is one slice of a domain's workload: the pods of ranks [firstRank, firstRank+size), all in
// one NVLink clique.
type ComputeDomainSlice struct {
	// index is the slice's position, 0 for the lowest ranks.
	// +required
	// +kubebuilder:validation:Minimum=0
	Index int32 `json:"index"`

	// firstRank is the slice's lowest rank (an Indexed Job's completion index, a LeaderWorkerSet's worker index).
	// +required
	// +kubebuilder:validation:Minimum=0
	FirstRank int32 `json:"firstRank"`

	// size is the number of the slice's ranks.
	// +required
	// +kubebuilder:validation:Minimum=1
	Size int32 `json:"size"`

	// cliqueID is the NVLink clique the slice's pods run in; empty until one of them is bound.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	CliqueID string `json:"cliqueID,omitempty"`

	// boundPods is the number of the slice's pods bound to a node.
	// +optional
	// +kubebuilder:validation:Minimum=0
	BoundPods int32 `json:"boundPods,omitempty"`

	// channel is the domain's IMEX channel in the slice's clique; unset until one is allocated.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2047
	Channel *int32 `json:"channel,omitempty"`

	// podGroup is the PodGroup the slice's pods join (Workload API with composite pod groups); empty otherwise.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PodGroup string `json:"podGroup,omitempty"`
}

// ComputeDomainList is a list of ComputeDomains.
//
// +kubebuilder:object:root=true
type ComputeDomainList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the ComputeDomains.
	Items []ComputeDomain `json:"items"`
}

func init() {
	register(&ComputeDomain{}, &ComputeDomainList{})
}
