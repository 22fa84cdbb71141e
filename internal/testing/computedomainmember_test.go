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

func TestComputeDomainMemberWrapper(t *testing.T) {
	cd := MakeComputeDomain("job", "team-a").UID("uid-1").Obj()
	type view struct {
		Name, Namespace string
		Labels          map[string]string
		Spec            v1beta1.ComputeDomainMemberSpec
		Ready           bool
		Conditions      map[string]metav1.ConditionStatus
	}
	viewOf := func(m *v1beta1.ComputeDomainMember) view {
		v := view{Name: m.Name, Namespace: m.Namespace, Labels: m.Labels, Spec: m.Spec, Ready: m.Status.Ready, Conditions: map[string]metav1.ConditionStatus{}}
		for _, c := range m.Status.Conditions {
			v.Conditions[c.Type] = c.Status
		}
		return v
	}
	spec := v1beta1.ComputeDomainMemberSpec{DomainUID: "uid-1", DomainNamespace: "team-a", DomainName: "job", NodeName: "n1", CliqueID: "c.1", IPAddress: "10.0.0.1"}
	cases := map[string]struct {
		got  *v1beta1.ComputeDomainMember
		want view
	}{
		"a ready member is named and labeled as its daemon does and has both conditions True": {
			got: MakeComputeDomainMember(cd, "n1", "op").Clique("c.1").IP("10.0.0.1").Ready().Obj(),
			want: view{
				Name: v1beta1.ComputeDomainMemberName("n1", "uid-1"), Namespace: "op",
				Labels: map[string]string{v1beta1.ComputeDomainLabelKey: "uid-1"}, Spec: spec, Ready: true,
				Conditions: map[string]metav1.ConditionStatus{
					v1beta1.ComputeDomainMemberConditionIMEXReady:      metav1.ConditionTrue,
					v1beta1.ComputeDomainMemberConditionPeersConnected: metav1.ConditionTrue,
				},
			},
		},
		"NotReady after Ready leaves only the failing condition": {
			got: MakeComputeDomainMember(cd, "n1", "op").Clique("c.1").IP("10.0.0.1").Ready().
				NotReady(v1beta1.ComputeDomainMemberConditionIMEXReady, "ProcessExited", "restarting").Obj(),
			want: view{
				Name: v1beta1.ComputeDomainMemberName("n1", "uid-1"), Namespace: "op",
				Labels: map[string]string{v1beta1.ComputeDomainLabelKey: "uid-1"}, Spec: spec,
				Conditions: map[string]metav1.ConditionStatus{v1beta1.ComputeDomainMemberConditionIMEXReady: metav1.ConditionFalse},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, viewOf(tc.got)); diff != "" {
				t.Errorf("member (-want +got):\n%s", diff)
			}
		})
	}
}
