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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// NodeWrapper builds a Node.
type NodeWrapper struct{ corev1.Node }

// MakeNode starts a schedulable Node named name without labels.
func MakeNode(name string) *NodeWrapper {
	return &NodeWrapper{corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}}
}

// Obj returns the built Node.
func (w *NodeWrapper) Obj() *corev1.Node { return &w.Node }

// Clique sets the NVLink clique label, as the GPU kubelet plugin does.
func (w *NodeWrapper) Clique(clique string) *NodeWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[v1beta1.CliqueNodeLabelKey] = clique
	return w
}

// Cordoned sets spec.unschedulable and the taint the node controller adds for it.
func (w *NodeWrapper) Cordoned() *NodeWrapper {
	w.Spec.Unschedulable = true
	return w.Taint(corev1.TaintNodeUnschedulable, "", corev1.TaintEffectNoSchedule)
}

// Taint adds a taint.
func (w *NodeWrapper) Taint(key, value string, effect corev1.TaintEffect) *NodeWrapper {
	w.Spec.Taints = append(w.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return w
}
