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

package imexclique

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

func node(name, ip string, owner types.UID) v1beta1.IMEXNode {
	n := v1beta1.IMEXNode{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "op"},
		Spec:       v1beta1.IMEXNodeSpec{NodeName: name, IPAddress: ip, CliqueID: "c.1"},
	}
	if owner != "" {
		n.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "imex-" + name, UID: owner}}
	}
	return n
}

func TestEnsemble(t *testing.T) {
	cases := map[string]struct {
		previous     []v1beta1.IMEXCliqueNode
		nodes        []v1beta1.IMEXNode
		limit        int
		want         []v1beta1.IMEXCliqueNode
		wantOverflow []string
	}{
		"new nodes take the lowest free indices in name order": {
			nodes: []v1beta1.IMEXNode{node("b", "10.0.0.2", "u"), node("a", "10.0.0.1", "u")},
			limit: 18,
			want:  []v1beta1.IMEXCliqueNode{{Name: "a", IPAddress: "10.0.0.1", Index: 0}, {Name: "b", IPAddress: "10.0.0.2", Index: 1}},
		},
		"a node keeps its index when another leaves, and a newcomer takes the freed one": {
			previous: []v1beta1.IMEXCliqueNode{{Name: "a", Index: 0}, {Name: "b", Index: 1}, {Name: "c", Index: 2}},
			nodes:    []v1beta1.IMEXNode{node("c", "10.0.0.3", "u"), node("a", "10.0.0.1", "u"), node("z", "10.0.0.9", "u")},
			limit:    18,
			want: []v1beta1.IMEXCliqueNode{
				{Name: "a", IPAddress: "10.0.0.1", Index: 0}, {Name: "c", IPAddress: "10.0.0.3", Index: 2}, {Name: "z", IPAddress: "10.0.0.9", Index: 1},
			},
		},
		"a node without an address, or whose record names another node, is left out": {
			nodes: []v1beta1.IMEXNode{node("a", "", "u"), func() v1beta1.IMEXNode { n := node("b", "10.0.0.2", "u"); n.Spec.NodeName = "x"; return n }()},
			limit: 18,
		},
		"nodes past the limit overflow until an index frees up": {
			nodes:        []v1beta1.IMEXNode{node("a", "10.0.0.1", "u"), node("b", "10.0.0.2", "u"), node("c", "10.0.0.3", "u")},
			limit:        2,
			want:         []v1beta1.IMEXCliqueNode{{Name: "a", IPAddress: "10.0.0.1", Index: 0}, {Name: "b", IPAddress: "10.0.0.2", Index: 1}},
			wantOverflow: []string{"c"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, overflow := Ensemble(v1beta1.IMEXCliqueStatus{Nodes: tc.previous}, tc.nodes, tc.limit)
			if diff := cmp.Diff(tc.want, got.Nodes); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
			if got.TotalNodes != int32(len(tc.want)) {
				t.Errorf("totalNodes %d, want %d", got.TotalNodes, len(tc.want))
			}
			if diff := cmp.Diff(tc.wantOverflow, overflow); diff != "" {
				t.Errorf("overflow (-want +got):\n%s", diff)
			}
		})
	}
}
