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
	corev1 "k8s.io/api/core/v1"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

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
