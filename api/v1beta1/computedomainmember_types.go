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
	"crypto/sha256"
	"encoding/hex"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Labels, names and field owners shared by the controller, the IMEX daemon and the compute-domain
// kubelet plugin. None of them is part of the compatible API: they are ours.
const (
	// ComputeDomainLabelKey labels every object a domain causes (its daemon DaemonSet, daemon claim
	// template, ComputeDomainMember records) with the domain's UID.
	ComputeDomainLabelKey = "resource.nvidia.com/computeDomain"
	// WorkloadClaimLabelKey labels the workload ResourceClaims of a domain with its UID. The controller
	// puts it in the workload claim template's spec.metadata, so every claim generated from the template
	// carries it; the controller watches those claims to learn on which nodes the domain's workload is
	// allocated, and places the domain's IMEX daemons there without labeling any node.
	WorkloadClaimLabelKey = "computedomain.resource.nvidia.com/workload-of"
	// ComputeDomainMemberFieldOwner is the server-side apply field manager of the daemon that writes a
	// ComputeDomainMember.
	ComputeDomainMemberFieldOwner = "compute-domain-daemon"
	// ComputeDomainMemberDomainUIDField is the field path the controller indexes members by.
	ComputeDomainMemberDomainUIDField = "spec.domainUID"
)

// ComputeDomainMember condition types, written by the member's daemon.
const (
	// ComputeDomainMemberConditionIMEXReady is True while the node's IMEX process answers READY.
	ComputeDomainMemberConditionIMEXReady = "IMEXReady"
	// ComputeDomainMemberConditionPeersConnected is True while the node's IMEX process is connected to
	// every peer of its clique that the domain's status lists.
	ComputeDomainMemberConditionPeersConnected = "PeersConnected"
)

// ComputeDomainMemberName returns the deterministic name of the member record of a (node, domain) pair:
// `<node>-<domain UID>`, the whole UID, so that two domains never share a record name on one node (a prefix of
// the UID could: records of different domains would overwrite each other). A node name too long for that is
// cut and followed by a hash of the whole node name, so that two long node names still differ.
func ComputeDomainMemberName(nodeName string, domainUID types.UID) string {
	uid := string(domainUID)
	const maxLen = 253
	name := nodeName + "-" + uid
	if len(name) <= maxLen {
		return name
	}
	sum := sha256.Sum256([]byte(nodeName))
	hash := hex.EncodeToString(sum[:])[:16]
	keep := maxLen - len(uid) - len(hash) - 2
	return nodeName[:keep] + "-" + hash + "-" + uid
}

// ComputeDomainMember is one node's membership in one ComputeDomain: the record the node's IMEX daemon
// writes (server-side apply, field owner compute-domain-daemon) and nothing else writes. The controller
// reads the records of a domain to assign per-clique indices and channels and to aggregate the domain's
// status. A member is owned by its daemon Pod, so the garbage collector removes it with the pod.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,path=computedomainmembers,singular=computedomainmember,shortName=cdmember,categories=nvidia
// +kubebuilder:printcolumn:name="Domain",type=string,JSONPath=`.spec.domainName`,description="ComputeDomain name"
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeName`,description="Node"
// +kubebuilder:printcolumn:name="IP",type=string,JSONPath=`.spec.ipAddress`,description="IMEX address"
// +kubebuilder:printcolumn:name="Clique",type=string,JSONPath=`.spec.cliqueID`,description="NVLink clique"
// +kubebuilder:printcolumn:name="Ready",type=boolean,JSONPath=`.status.ready`,description="IMEX daemon ready"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ComputeDomainMember struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec identifies the domain and the node.
	// +required
	Spec ComputeDomainMemberSpec `json:"spec"`

	// status is the readiness of the node's IMEX daemon.
	// +optional
	Status ComputeDomainMemberStatus `json:"status,omitempty"`
}

// ComputeDomainMemberSpec identifies a (domain, node) pair and the node's IMEX identity.
//
// +kubebuilder:validation:XValidation:rule="self.domainUID == oldSelf.domainUID",message="domainUID is immutable"
// +kubebuilder:validation:XValidation:rule="self.nodeName == oldSelf.nodeName",message="nodeName is immutable"
type ComputeDomainMemberSpec struct {
	// domainUID is the metadata.uid of the ComputeDomain.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	DomainUID string `json:"domainUID"`

	// domainNamespace is the namespace of the ComputeDomain.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	DomainNamespace string `json:"domainNamespace"`

	// domainName is the name of the ComputeDomain.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	DomainName string `json:"domainName"`

	// nodeName is the name of the Node the daemon runs on.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	NodeName string `json:"nodeName"`

	// ipAddress is the address the node's IMEX daemon listens on for its peers.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	IPAddress string `json:"ipAddress,omitempty"`

	// cliqueID is the node's NVLink clique, `<clusterUUID>.<cliqueId>`; empty when the node has no
	// multi-node NVLink fabric.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	CliqueID string `json:"cliqueID,omitempty"`
}

// ComputeDomainMemberStatus is the readiness of one node's IMEX daemon.
type ComputeDomainMemberStatus struct {
	// ready is true when the node's IMEX process answers READY and is connected to its clique's peers.
	// +optional
	Ready bool `json:"ready,omitempty"`

	// conditions detail the readiness: IMEXReady and PeersConnected. Their messages name the cause when
	// the daemon is not ready; the controller copies them into the domain's conditions.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ComputeDomainMemberList is a list of ComputeDomainMembers.
//
// +kubebuilder:object:root=true
type ComputeDomainMemberList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the ComputeDomainMembers.
	Items []ComputeDomainMember `json:"items"`
}

func init() {
	register(&ComputeDomainMember{}, &ComputeDomainMemberList{})
}
