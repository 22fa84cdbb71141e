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

package allocation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
)

func TestNode(t *testing.T) {
	claim := func(sel *corev1.NodeSelector) *resourcev1.ResourceClaim {
		return &resourcev1.ResourceClaim{Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{NodeSelector: sel}}}
	}
	twoTerms := NodeSelector("n1")
	twoTerms.NodeSelectorTerms = append(twoTerms.NodeSelectorTerms, NodeSelector("n2").NodeSelectorTerms...)
	byLabel := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}}}
	cases := map[string]struct {
		claim *resourcev1.ResourceClaim
		want  string
	}{
		"node-local allocation":            {claim(NodeSelector("n1")), "n1"},
		"unallocated":                      {&resourcev1.ResourceClaim{}, ""},
		"network-attached (no selector)":   {claim(nil), ""},
		"two terms name no single node":    {claim(twoTerms), ""},
		"a label selector is not the name": {claim(byLabel), ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := Node(tc.claim)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("Node = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}
