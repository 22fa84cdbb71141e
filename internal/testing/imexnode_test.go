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

package testing

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

func TestIMEXNodeWrapper(t *testing.T) {
	type view struct {
		Name, Namespace string
		Spec            v1beta1.IMEXNodeSpec
		Owner           string
		Ready           bool
		Conditions      map[string]metav1.ConditionStatus
	}
	viewOf := func(n *v1beta1.IMEXNode) view {
		v := view{Name: n.Name, Namespace: n.Namespace, Spec: n.Spec, Ready: n.Status.Ready, Conditions: map[string]metav1.ConditionStatus{}}
		for _, ref := range n.OwnerReferences {
			v.Owner = ref.Kind + "/" + ref.Name + "/" + string(ref.UID)
		}
		for _, c := range n.Status.Conditions {
			v.Conditions[c.Type] = c.Status
		}
		return v
	}
	spec := v1beta1.IMEXNodeSpec{NodeName: "n1", CliqueID: "c.1", IPAddress: "10.0.0.1"}
	cases := map[string]struct {
		got  *v1beta1.IMEXNode
		want view
	}{
		"a ready node is named after its node, owned by its daemon pod, and has both conditions True": {
			got: MakeIMEXNode("n1", "op").Clique("c.1").IP("10.0.0.1").OwnedBy("imex-n1", "pod-1").Ready().Obj(),
			want: view{
				Name: "n1", Namespace: "op", Spec: spec, Owner: "Pod/imex-n1/pod-1", Ready: true,
				Conditions: map[string]metav1.ConditionStatus{
					v1beta1.IMEXNodeConditionIMEXReady:      metav1.ConditionTrue,
					v1beta1.IMEXNodeConditionPeersConnected: metav1.ConditionTrue,
				},
			},
		},
		"NotReady turns the named condition False and keeps the other True": {
			got: MakeIMEXNode("n1", "op").Clique("c.1").IP("10.0.0.1").NotReady(v1beta1.IMEXNodeConditionPeersConnected, "PeersMissing", "2 of 3").Obj(),
			want: view{
				Name: "n1", Namespace: "op", Spec: spec,
				Conditions: map[string]metav1.ConditionStatus{
					v1beta1.IMEXNodeConditionIMEXReady:      metav1.ConditionTrue,
					v1beta1.IMEXNodeConditionPeersConnected: metav1.ConditionFalse,
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, viewOf(tc.got)); diff != "" {
				t.Errorf("IMEXNode (-want +got):\n%s", diff)
			}
		})
	}
}
