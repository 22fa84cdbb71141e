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
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IMEXCliqueName returns the name of the IMEXClique of an NVLink clique: the clique ID in lower case with every
// character a Kubernetes name does not allow replaced by '-', followed by a hash of the whole ID when that
// changed anything or the ID is too long, so that two cliques never share a name.
func IMEXCliqueName(cliqueID string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(cliqueID) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-.")
	const maxLen = 253
	if name == cliqueID && name != "" && len(name) <= maxLen {
		return name
	}
	sum := sha256.Sum256([]byte(cliqueID))
	hash := hex.EncodeToString(sum[:])[:16]
	if keep := maxLen - len(hash) - 1; len(name) > keep {
		name = strings.TrimRight(name[:keep], "-.")
	}
	if name == "" {
		return "clique-" + hash
	}
	return name + "-" + hash
}

// IMEXClique is the long-lived IMEX ensemble of one NVLink clique: every node of the
// clique whose IMEX daemon the controller trusts, with the node's stable index in the ensemble. The
// controller writes it and nothing else does; the clique's daemons read it to render their IMEX nodes file.
// It is named IMEXCliqueName(spec.cliqueID).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,path=imexcliques,singular=imexclique,categories=nvidia
// +kubebuilder:printcolumn:name="Clique",type=string,JSONPath=`.spec.cliqueID`,description="NVLink clique"
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.totalNodes`,description="Nodes in the ensemble"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type IMEXClique struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the clique.
	// +required
	Spec IMEXCliqueSpec `json:"spec"`

	// status is the clique's ensemble.
	// +optional
	Status IMEXCliqueStatus `json:"status,omitempty"`
}

// IMEXCliqueSpec names an NVLink clique.
//
// +kubebuilder:validation:XValidation:rule="self.cliqueID == oldSelf.cliqueID",message="cliqueID is immutable"
type IMEXCliqueSpec struct {
	// cliqueID is the NVLink clique, `<clusterUUID>.<cliqueId>`.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	CliqueID string `json:"cliqueID"`
}

// IMEXCliqueStatus is the ensemble of one clique.
type IMEXCliqueStatus struct {
	// nodes are the ensemble's members, sorted by name. A node keeps its index while it stays a member.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Nodes []IMEXCliqueNode `json:"nodes,omitempty"`

	// totalNodes is the number of nodes in the ensemble.
	// +optional
	TotalNodes int32 `json:"totalNodes,omitempty"`
}

// IMEXCliqueNode is one node of a clique's ensemble.
type IMEXCliqueNode struct {
	// name is the node's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// ipAddress is the address of the node's IMEX daemon.
	// +required
	// +kubebuilder:validation:MaxLength=64
	IPAddress string `json:"ipAddress"`

	// index is the node's IMEX node index in the ensemble, 0 to 17 on an NVL72 clique.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=63
	Index int32 `json:"index"`
}

// IMEXCliqueList is a list of IMEXCliques.
//
// +kubebuilder:object:root=true
type IMEXCliqueList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the IMEXCliques.
	Items []IMEXClique `json:"items"`
}

func init() {
	register(&IMEXClique{}, &IMEXCliqueList{})
}
