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

// CliqueNodeLabelKey is the Node label holding the node's NVLink clique, `<clusterUUID>.<cliqueId>` (NVIDIA's
// name): the GPU kubelet plugin sets it on its node; nodes without a multi-node fabric have none.
const CliqueNodeLabelKey = "nvidia.com/gpu.clique"

// IMEXNodeFieldOwner is the server-side apply field manager of the long-lived daemon that writes an IMEXNode.
const IMEXNodeFieldOwner = "compute-domain-imex-daemon"

// IMEXNode condition types, written by the node's daemon.
const (
	// IMEXNodeConditionIMEXReady is True while the node's IMEX process answers READY.
	IMEXNodeConditionIMEXReady = "IMEXReady"
	// IMEXNodeConditionPeersConnected is True while the node's IMEX process is connected to every peer of
	// its clique's ensemble (the IMEXClique).
	IMEXNodeConditionPeersConnected = "PeersConnected"
)

// Reasons of the IMEXReady cause the controller gives a domain's node when the node's long-lived daemon cannot
// serve it yet (the daemon's own conditions otherwise); the domain's DaemonsReady condition quotes them.
const (
	// IMEXNodeReasonNoIMEXDaemon: no trusted long-lived IMEX daemon reports for the node.
	IMEXNodeReasonNoIMEXDaemon = "NoIMEXDaemon"
	// IMEXNodeReasonNotInEnsemble: the node's daemon reports, but its clique's ensemble does not list it yet.
	IMEXNodeReasonNotInEnsemble = "NotInEnsemble"
	// IMEXNodeReasonRefused (an event's reason, on the IMEXNode): the IMEXNode disagrees with the long-lived
	// daemon pods (no such pod owns it, or it names another node or address than its pod's) and is ignored.
	IMEXNodeReasonRefused = "IMEXNodeRefused"
)

// IMEXNode is one node's long-lived IMEX daemon: its address, its NVLink clique and
// its readiness. The node's daemon writes it (server-side apply, field owner compute-domain-imex-daemon) and
// nothing else does; it is named after the node and owned by the daemon's Pod, so the garbage collector
// removes it with the pod. The controller trusts it only while that pod runs on the node at the address.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,path=imexnodes,singular=imexnode,categories=nvidia
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeName`,description="Node"
// +kubebuilder:printcolumn:name="IP",type=string,JSONPath=`.spec.ipAddress`,description="IMEX address"
// +kubebuilder:printcolumn:name="Clique",type=string,JSONPath=`.spec.cliqueID`,description="NVLink clique"
// +kubebuilder:printcolumn:name="Ready",type=boolean,JSONPath=`.status.ready`,description="IMEX daemon ready"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type IMEXNode struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec identifies the node and its IMEX identity.
	// +required
	Spec IMEXNodeSpec `json:"spec"`

	// status is the readiness of the node's IMEX daemon in its clique's ensemble.
	// +optional
	Status IMEXNodeStatus `json:"status,omitempty"`
}

// IMEXNodeSpec is a node's IMEX identity.
//
// +kubebuilder:validation:XValidation:rule="self.nodeName == oldSelf.nodeName",message="nodeName is immutable"
type IMEXNodeSpec struct {
	// nodeName is the name of the Node the daemon runs on.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	NodeName string `json:"nodeName"`

	// ipAddress is the address the node's IMEX daemon listens on for its peers.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	IPAddress string `json:"ipAddress,omitempty"`

	// cliqueID is the node's NVLink clique, `<clusterUUID>.<cliqueId>`.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	CliqueID string `json:"cliqueID"`
}

// IMEXNodeStatus is the readiness of one node's IMEX daemon.
type IMEXNodeStatus struct {
	// ready is true when the node's IMEX process answers READY and is connected to its clique's peers.
	// +optional
	Ready bool `json:"ready,omitempty"`

	// conditions detail the readiness: IMEXReady and PeersConnected. Their messages name the cause when
	// the daemon is not ready; the controller copies them into the conditions of the domains on the node.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// IMEXNodeList is a list of IMEXNodes.
//
// +kubebuilder:object:root=true
type IMEXNodeList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the IMEXNodes.
	Items []IMEXNode `json:"items"`
}

func init() {
	register(&IMEXNode{}, &IMEXNodeList{})
}
