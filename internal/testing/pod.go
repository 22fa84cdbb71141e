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
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// PodWrapper builds a Pod.
type PodWrapper struct{ corev1.Pod }

// MakePod starts a Pod named name in namespace ns with one container "c" (the API requires one).
func MakePod(name, ns string) *PodWrapper {
	return &PodWrapper{corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}}
}

// Obj returns the built Pod.
func (w *PodWrapper) Obj() *corev1.Pod { return &w.Pod }

// UID sets metadata.uid.
func (w *PodWrapper) UID(uid types.UID) *PodWrapper {
	w.ObjectMeta.UID = uid
	return w
}

// Labels adds labels to metadata.labels.
func (w *PodWrapper) Labels(labels map[string]string) *PodWrapper {
	if w.ObjectMeta.Labels == nil {
		w.ObjectMeta.Labels = map[string]string{}
	}
	maps.Copy(w.ObjectMeta.Labels, labels)
	return w
}

// Node sets spec.nodeName: the pod is bound to node.
func (w *PodWrapper) Node(node string) *PodWrapper {
	w.Spec.NodeName = node
	return w
}

// ResourceClaim adds a pod claim named name made from the ResourceClaimTemplate template, and its use by the
// first container.
func (w *PodWrapper) ResourceClaim(name, template string) *PodWrapper {
	w.Spec.ResourceClaims = append(w.Spec.ResourceClaims, corev1.PodResourceClaim{Name: name, ResourceClaimTemplateName: ptr.To(template)})
	c := &w.Spec.Containers[0]
	c.Resources.Claims = append(c.Resources.Claims, corev1.ResourceClaim{Name: name})
	return w
}

// SchedulingGates adds scheduling gates (the pod waits until they are removed).
func (w *PodWrapper) SchedulingGates(gates ...string) *PodWrapper {
	for _, g := range gates {
		w.Spec.SchedulingGates = append(w.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: g})
	}
	return w
}

// Phase sets status.phase.
func (w *PodWrapper) Phase(phase corev1.PodPhase) *PodWrapper {
	w.Status.Phase = phase
	return w
}
