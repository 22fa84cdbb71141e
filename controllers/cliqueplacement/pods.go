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

package cliqueplacement

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/sliceplan"
)

// membership is a domain's live pods as the fallback sees them: which slice of the plan each belongs to.
type membership struct {
	// waiting are the held pods, each with its slice.
	waiting []waitingPod
	// released says some pod of the domain carries the clique annotation: the fallback released it.
	released bool
	// cliques maps a slice to the clique its released pods name.
	cliques map[int]string
	// count is the number of live pods (held or released) per slice; present all of them.
	count   map[int]int
	present int
}

// waitingPod is a held pod and its slice.
type waitingPod struct {
	pod   *corev1.Pod
	slice int
}

// members sorts the domain's live pods into the slices of plan. A pod with a rank (sliceplan.RankOf) within the
// plan belongs to its rank's slice; a one-slice plan takes every pod. A released pod without one belongs to the
// slice whose clique its annotation names (or takes the first slice without a clique); a held one fills the
// slices with room in slice order (by name, so every pass agrees), or the fullest plan's least-filled slice.
func members(plan sliceplan.Plan, pods []corev1.Pod) membership {
	m := membership{cliques: map[int]string{}, count: map[int]int{}}
	live := make([]*corev1.Pod, 0, len(pods))
	for i := range pods {
		if p := &pods[i]; !finished(p) {
			live = append(live, p)
		}
	}
	slices.SortFunc(live, func(a, b *corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	m.present = len(live)
	sliceOf := func(p *corev1.Pod) (int, bool) {
		if len(plan.Slices) == 1 {
			return 0, true
		}
		rank, ok, err := sliceplan.RankOf(p.Labels, p.Annotations)
		if err != nil || !ok {
			return 0, false
		}
		s, in := plan.SliceOf(rank)
		return s.Index, in
	}
	var rankless []*corev1.Pod
	for _, p := range live {
		slice, ok := sliceOf(p)
		if !ok {
			rankless = append(rankless, p)
			continue
		}
		m.count[slice]++
		m.add(p, slice)
	}
	// Rankless pods: the released ones first, so the held ones fill what remains.
	slices.SortStableFunc(rankless, func(a, b *corev1.Pod) int {
		return cmp.Compare(boolInt(held(a)), boolInt(held(b)))
	})
	for _, p := range rankless {
		slice := m.roomFor(plan, p)
		m.count[slice]++
		m.add(p, slice)
	}
	return m
}

// add records p, of slice, as waiting or released.
func (m *membership) add(p *corev1.Pod, slice int) {
	if held(p) {
		m.waiting = append(m.waiting, waitingPod{pod: p, slice: slice})
		return
	}
	if c := p.Annotations[v1beta1.PlacementCliqueAnnotationKey]; c != "" {
		m.released = true
		if m.cliques[slice] == "" {
			m.cliques[slice] = c
		}
	}
}

// roomFor is the slice a pod without a rank joins (see members).
func (m *membership) roomFor(plan sliceplan.Plan, p *corev1.Pod) int {
	if c := p.Annotations[v1beta1.PlacementCliqueAnnotationKey]; c != "" && !held(p) {
		for _, s := range plan.Slices {
			if m.cliques[s.Index] == c {
				return s.Index
			}
		}
		for _, s := range plan.Slices {
			if m.cliques[s.Index] == "" {
				return s.Index
			}
		}
	}
	least := plan.Slices[0].Index
	for _, s := range plan.Slices {
		if m.count[s.Index] < s.Size {
			return s.Index
		}
		if m.count[s.Index]-s.Size < m.count[least]-plan.Slices[least].Size {
			least = s.Index
		}
	}
	return least
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// held tells whether the pod waits behind the clique placement gate.
func held(p *corev1.Pod) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == v1beta1.CliquePlacementGate {
			return true
		}
	}
	return false
}

// finished tells whether the pod is done or going: it takes no node of its clique.
func finished(p *corev1.Pod) bool {
	return p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// pinToClique is the held pod released into clique: required node affinity to the clique added to every term
// of its own (a pod may only tighten its node affinity while gated), the clique recorded in an annotation, and
// the gate removed, all in one update.
func pinToClique(pod *corev1.Pod, clique string) *corev1.Pod {
	p := pod.DeepCopy()
	req := corev1.NodeSelectorRequirement{Key: TopologyKey, Operator: corev1.NodeSelectorOpIn, Values: []string{clique}}
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	if p.Spec.Affinity.NodeAffinity == nil {
		p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := p.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchExpressions = append(terms[i].MatchExpressions, req)
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[v1beta1.PlacementCliqueAnnotationKey] = clique
	gates := p.Spec.SchedulingGates[:0:0]
	for _, g := range p.Spec.SchedulingGates {
		if g.Name != v1beta1.CliquePlacementGate {
			gates = append(gates, g)
		}
	}
	p.Spec.SchedulingGates = gates
	return p
}
