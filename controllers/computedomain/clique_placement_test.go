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

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

func TestFreeCapacityAndPick(t *testing.T) {
	node := func(name, clique string) metav1.PartialObjectMetadata {
		n := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		if clique != "" {
			n.Labels[PlacementTopologyKey] = clique
		}
		return n
	}
	claimOn := func(node, driver string) resourcev1.ResourceClaim {
		return resourcev1.ResourceClaim{Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{
			Devices:      resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{Driver: driver, Pool: node, Device: "gpu-0"}}},
			NodeSelector: nodeSelectorFor(node),
		}}}
	}
	releasedTo := func(clique, nodeName string, gated bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1beta1.PlacementCliqueAnnotationKey: clique}}}
		p.Spec.NodeName = nodeName
		if gated {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: v1beta1.CliquePlacementGate}}
		}
		return p
	}
	var nodes []metav1.PartialObjectMetadata
	for _, c := range []string{"a", "b", "c"} {
		for i := range 4 {
			nodes = append(nodes, node(c+string(rune('0'+i)), c))
		}
	}
	nodes = append(nodes, node("cpu-0", ""))
	claims := []resourcev1.ResourceClaim{
		claimOn("a0", v1beta1.GPUDriverName),
		claimOn("a1", v1beta1.GPUDriverName),
		// A channel claim alone does not make a node busy, nor a claim not yet allocated.
		claimOn("b0", v1beta1.ComputeDomainDriverName),
		{},
	}
	released := []corev1.Pod{
		releasedTo("c", "", false),   // heading for clique c: one node taken
		releasedTo("c", "c3", false), // bound: counted by its claims, not here
		releasedTo("b", "", true),    // still held: takes nothing
	}
	free := freeCapacity(nodes, claims, v1beta1.GPUDriverName, released)
	want := cliqueCapacity{"a": 2, "b": 4, "c": 3}
	if len(free) != len(want) {
		t.Fatalf("free %v, want %v", free, want)
	}
	for c, n := range want {
		if free[c] != n {
			t.Errorf("clique %s: %d free, want %d (all: %v)", c, free[c], n, free)
		}
	}
	for need, clique := range map[int]string{2: "a", 3: "c", 4: "b", 5: ""} {
		if got := free.pick(need); got != clique {
			t.Errorf("pick(%d) = %q, want %q: the tightest clique that holds them (%v)", need, got, clique, free)
		}
	}
	if s := free.String(); s != "free nodes per clique: a: 2, b: 4, c: 3" {
		t.Errorf("message %q", s)
	}
}

func TestPinToClique(t *testing.T) {
	own := corev1.NodeSelectorRequirement{Key: "example.com/pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"x"}}
	pod := &corev1.Pod{}
	pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/other"}, {Name: v1beta1.CliquePlacementGate}}
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{own}}, {}},
	}}}
	got := pinToClique(pod, "cluster.7")
	if len(got.Spec.SchedulingGates) != 1 || got.Spec.SchedulingGates[0].Name != "example.com/other" {
		t.Errorf("gates %v: want only the pod's own", got.Spec.SchedulingGates)
	}
	if len(pod.Spec.SchedulingGates) != 2 {
		t.Errorf("the input pod was changed: %v", pod.Spec.SchedulingGates)
	}
	terms := got.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i, term := range terms {
		last := term.MatchExpressions[len(term.MatchExpressions)-1]
		if last.Key != PlacementTopologyKey || len(last.Values) != 1 || last.Values[0] != "cluster.7" {
			t.Errorf("term %d: %v, want the clique ANDed in", i, term.MatchExpressions)
		}
	}
	if len(terms[0].MatchExpressions) != 2 || terms[0].MatchExpressions[0].Key != own.Key {
		t.Errorf("the pod's own requirement is kept: %v", terms[0].MatchExpressions)
	}
	if got.Annotations[v1beta1.PlacementCliqueAnnotationKey] != "cluster.7" {
		t.Errorf("annotations %v", got.Annotations)
	}
	bare := pinToClique(&corev1.Pod{Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: v1beta1.CliquePlacementGate}}}}, "c")
	if bare.Spec.SchedulingGates == nil || len(bare.Spec.SchedulingGates) != 0 {
		t.Errorf("gates %#v: want an empty list", bare.Spec.SchedulingGates)
	}
	if n := len(bare.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms); n != 1 {
		t.Errorf("a pod without node affinity gets one term, got %d", n)
	}
}

// nodeSelectorFor is the node selector the scheduler writes into an allocation of node-local devices.
func nodeSelectorFor(node string) *corev1.NodeSelector {
	return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
		{Key: nodeNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}},
	}}}}
}
