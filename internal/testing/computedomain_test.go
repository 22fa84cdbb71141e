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

func TestComputeDomainWrapper(t *testing.T) {
	ready, notReady := v1beta1.ComputeDomainStatusReady, v1beta1.ComputeDomainStatusNotReady
	cases := map[string]struct {
		got  *v1beta1.ComputeDomain
		want v1beta1.ComputeDomainStatus
	}{
		"a node with a known name replaces the entry in place": {
			got: MakeComputeDomain("cd", "ns").
				Node(MakeComputeDomainNode("a", "10.0.0.1", "c.1", 0, notReady)).
				Node(MakeComputeDomainNode("b", "10.0.0.2", "c.1", 1, notReady)).
				Node(MakeComputeDomainNode("a", "10.0.0.1", "c.1", 0, ready)).Obj(),
			want: v1beta1.ComputeDomainStatus{Nodes: []v1beta1.ComputeDomainNode{
				MakeComputeDomainNode("a", "10.0.0.1", "c.1", 0, ready),
				MakeComputeDomainNode("b", "10.0.0.2", "c.1", 1, notReady),
			}},
		},
		"a condition with a known type replaces the entry": {
			got: MakeComputeDomain("cd", "ns").
				Condition(metav1.Condition{Type: v1beta1.ComputeDomainConditionReady, Status: metav1.ConditionFalse}).
				Condition(metav1.Condition{Type: v1beta1.ComputeDomainConditionReady, Status: metav1.ConditionTrue}).Obj(),
			want: v1beta1.ComputeDomainStatus{Conditions: []metav1.Condition{
				{Type: v1beta1.ComputeDomainConditionReady, Status: metav1.ConditionTrue},
			}},
		},
		"a clique with a known ID replaces the entry": {
			got: MakeComputeDomain("cd", "ns").
				Clique(v1beta1.ComputeDomainClique{CliqueID: "c.1", TotalNodes: 1}).
				Clique(v1beta1.ComputeDomainClique{CliqueID: "c.1", TotalNodes: 2}).Obj(),
			want: v1beta1.ComputeDomainStatus{Cliques: []v1beta1.ComputeDomainClique{{CliqueID: "c.1", TotalNodes: 2}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMakeComputeDomainDefaults(t *testing.T) {
	got := MakeComputeDomain("train", "team").Obj()
	want := v1beta1.ComputeDomainSpec{Channel: v1beta1.ComputeDomainChannelSpec{
		ResourceClaimTemplate: v1beta1.ComputeDomainResourceClaimTemplate{Name: "train-channel"},
	}}
	if diff := cmp.Diff(want, got.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if got.APIVersion != "resource.nvidia.com/v1beta1" || got.Kind != "ComputeDomain" || got.Namespace != "team" {
		t.Errorf("type or namespace: got %s %s in %q", got.APIVersion, got.Kind, got.Namespace)
	}
}

func TestCloneIsIndependent(t *testing.T) {
	base := MakeComputeDomain("cd", "ns").Label("team", "a")
	variant := base.Clone().Label("team", "b").NumNodes(4)
	if base.Obj().Labels["team"] != "a" || base.Obj().Spec.NumNodes != 0 {
		t.Errorf("editing a clone changed the original: %+v", base.Obj())
	}
	if variant.Obj().Labels["team"] != "b" || variant.Obj().Spec.NumNodes != 4 {
		t.Errorf("the clone lost its edits: %+v", variant.Obj())
	}
}
