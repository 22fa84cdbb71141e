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
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
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
		held         []string // previous members whose node is still in the clique
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
		"a member whose daemon is away stays, at its last address, and a newcomer takes the next free index": {
			previous: []v1beta1.IMEXCliqueNode{{Name: "a", Index: 0}, {Name: "b", IPAddress: "10.0.0.2", Index: 1}, {Name: "c", Index: 2}},
			nodes:    []v1beta1.IMEXNode{node("c", "10.0.0.3", "u"), node("a", "10.0.0.1", "u"), node("z", "10.0.0.9", "u")},
			limit:    18,
			held:     []string{"b"},
			want: []v1beta1.IMEXCliqueNode{
				{Name: "a", IPAddress: "10.0.0.1", Index: 0}, {Name: "b", IPAddress: "10.0.0.2", Index: 1},
				{Name: "c", IPAddress: "10.0.0.3", Index: 2}, {Name: "z", IPAddress: "10.0.0.9", Index: 3},
			},
		},
		"in a full clique a node claiming it overflows while a member's daemon is away": {
			previous:     []v1beta1.IMEXCliqueNode{{Name: "a", IPAddress: "10.0.0.1", Index: 0}, {Name: "b", IPAddress: "10.0.0.2", Index: 1}},
			nodes:        []v1beta1.IMEXNode{node("a", "10.0.0.1", "u"), node("intruder", "10.0.0.66", "u")},
			limit:        2,
			held:         []string{"b"},
			want:         []v1beta1.IMEXCliqueNode{{Name: "a", IPAddress: "10.0.0.1", Index: 0}, {Name: "b", IPAddress: "10.0.0.2", Index: 1}},
			wantOverflow: []string{"intruder"},
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
			got, overflow := Ensemble(v1beta1.IMEXCliqueStatus{Nodes: tc.previous}, tc.nodes, tc.limit, func(n string) bool { return slices.Contains(tc.held, n) })
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

// A compromised node's daemon writes an IMEXNode claiming another clique than the one its node's GPU plugin
// labeled it with: refused, naming both, and not in the claimed clique's ensemble; the real member is.
func TestReconcileRefusesAnIMEXNodeWhoseCliqueDisagreesWithItsNodeLabel(t *testing.T) {
	ctx := context.Background()
	scheme, err := kubescheme.New()
	if err != nil {
		t.Fatal(err)
	}
	daemonPod := func(node, ip string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "imex-" + node, Namespace: "op", UID: types.UID("pod-" + node),
			Labels: map[string]string{AppLabelKey: AppLabelValue, ComponentLabelKey: ComponentLabelValue}}}
		p.Spec.NodeName = node
		p.Status.PodIP = ip
		return p
	}
	imexNodeOf := func(name, ip, clique string) *v1beta1.IMEXNode {
		n := node(name, ip, types.UID("pod-"+name))
		n.Spec.CliqueID = clique
		return &n
	}
	labeled := func(name, clique string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1beta1.CliqueNodeLabelKey: clique}}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(labeled("b1", "c.B"), labeled("a1", "c.A"), daemonPod("b1", "10.0.0.1"), daemonPod("a1", "10.0.0.2"),
			imexNodeOf("b1", "10.0.0.1", "c.B"), imexNodeOf("a1", "10.0.0.2", "c.B")).
		WithIndex(&v1beta1.IMEXNode{}, cliqueIDIndexField, func(o client.Object) []string {
			return []string{v1beta1.IMEXCliqueName(o.(*v1beta1.IMEXNode).Spec.CliqueID)}
		}).
		WithStatusSubresource(&v1beta1.IMEXClique{}).Build()
	refusals := map[string]string{}
	r := NewReconciler(c, "op", 18, func(_ context.Context, n *v1beta1.IMEXNode, reason string) { refusals[n.Name] = reason })
	name := v1beta1.IMEXCliqueName("c.B")
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "op", Name: name}}); err != nil {
		t.Fatal(err)
	}
	var q v1beta1.IMEXClique
	if err := c.Get(ctx, client.ObjectKey{Namespace: "op", Name: name}, &q); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]v1beta1.IMEXCliqueNode{{Name: "b1", IPAddress: "10.0.0.1", Index: 0}}, q.Status.Nodes); diff != "" {
		t.Errorf("clique c.B's ensemble (-want +got):\n%s", diff)
	}
	if want := `it says clique c.B but node a1's nvidia.com/gpu.clique label, which only the node's GPU plugin may set, says "c.A"`; refusals["a1"] != want {
		t.Errorf("refusal of a1 %q, want %q", refusals["a1"], want)
	}
	if _, refused := refusals["b1"]; refused {
		t.Errorf("the real member b1 was refused: %s", refusals["b1"])
	}
}
