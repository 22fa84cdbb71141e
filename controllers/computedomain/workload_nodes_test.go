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

package computedomain

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func allocatedOn(node string) *resourcev1.AllocationResult {
	return &resourcev1.AllocationResult{NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
	}}}}
}

func workloadClaim(name string, alloc *resourcev1.AllocationResult, reserved bool) resourcev1.ResourceClaim {
	c := resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"}}
	c.Status.Allocation = alloc
	if reserved {
		c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: name, UID: "pod-" + "name"}}
	}
	return c
}

func TestWorkloadNodes(t *testing.T) {
	networkAttached := &resourcev1.AllocationResult{NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "rack", Operator: corev1.NodeSelectorOpIn, Values: []string{"r1"}}},
	}}}}
	claims := []resourcev1.ResourceClaim{
		workloadClaim("pod-0", allocatedOn("n2"), true),
		workloadClaim("pod-1", allocatedOn("n1"), true),
		workloadClaim("pod-2", allocatedOn("n2"), true),              // a second pod on n2: n2 once
		workloadClaim("pod-3", nil, false),                           // not scheduled yet
		workloadClaim("pod-4", allocatedOn("n3"), false),             // its pod is done: no reservation left
		workloadClaim("pod-5", networkAttached, true),                // no single node: not a node-local device
		workloadClaim("pod-6", &resourcev1.AllocationResult{}, true), // allocated without a node selector
	}
	if diff := cmp.Diff([]string{"n1", "n2"}, WorkloadNodes(claims)); diff != "" {
		t.Errorf("workload nodes (-want +got):\n%s", diff)
	}
	if got := WorkloadNodes(nil); len(got) != 0 {
		t.Errorf("no claims: nodes %v, want none", got)
	}
}
