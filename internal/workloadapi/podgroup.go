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

// Package workloadapi is the operator's one door to the Kubernetes Workload API (scheduling.k8s.io/v1beta1,
// Kubernetes 1.37): it builds the PodGroup a ComputeDomain's workload joins, reads back what the API server
// stored and what the scheduler reported, and tells whether the cluster serves the API at all. No other
// package imports the scheduling.k8s.io types: the Workload API changes every release (v1alpha1 → v1alpha2 →
// v1beta1 in three), and a new version should cost this package only.
package workloadapi

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// GroupVersion is the Workload API version the operator speaks.
var GroupVersion = schedulingv1beta1.SchemeGroupVersion

// Resource is the PodGroup resource of GroupVersion.
const Resource = "podgroups"

// Gang is the PodGroup the operator wants for a workload: all-or-nothing for at least MinCount pods, every
// pod on nodes that share one value of the node label TopologyKey (none when empty).
type Gang struct {
	Namespace string
	Name      string
	// MinCount is the gang's size: the scheduler binds none of its pods until MinCount of them fit at once.
	MinCount int32
	// TopologyKey is the node label whose value all the gang's pods share (the NVLink clique label).
	TopologyKey string
	Labels      map[string]string
	Annotations map[string]string
	// Owner, when set, is the PodGroup's controller owner reference.
	Owner *metav1.OwnerReference
}

// PodGroup is the object that realizes the gang. Its resourceClaims stay empty: a claim on the PodGroup is
// one claim shared by every pod of the group, which suits a device all the pods' nodes can reach, not the
// node-local channel slots a ComputeDomain's pods each get on their own node (see docs/design/computedomains.md).
func (g Gang) PodGroup() client.Object {
	pg := &schedulingv1beta1.PodGroup{
		TypeMeta: metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   g.Namespace,
			Name:        g.Name,
			Labels:      g.Labels,
			Annotations: g.Annotations,
		},
		Spec: schedulingv1beta1.PodGroupSpec{
			SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
				Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: g.MinCount},
			},
		},
	}
	if g.TopologyKey != "" {
		pg.Spec.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{
			Topology: []schedulingv1beta1.TopologyConstraint{{Key: g.TopologyKey}},
		}
	}
	if g.Owner != nil {
		pg.OwnerReferences = []metav1.OwnerReference{*g.Owner}
	}
	return pg
}

// NewPodGroup returns an empty PodGroup to read into, and to configure caches and watches with.
func NewPodGroup() client.Object { return &schedulingv1beta1.PodGroup{} }

// Observed is what a PodGroup says, as the API server stored it and the scheduler reported on it.
type Observed struct {
	// ControllerUID is the UID of the PodGroup's controller owner, if it has one.
	ControllerUID types.UID
	// Gang tells whether the PodGroup's policy is a gang; MinCount is then its size.
	Gang     bool
	MinCount int32
	// TopologyKey is the node label of its topology constraint; empty when it has none, which is also what
	// an API server without TopologyAwareWorkloadScheduling stores (it drops the field on create).
	TopologyKey string
	// Scheduled is the scheduler's PodGroupInitiallyScheduled condition, nil until it reported one.
	Scheduled *metav1.Condition
}

// Scheduled condition reasons the scheduler sets (PodGroupInitiallyScheduled).
const (
	ReasonUnschedulable  = schedulingv1beta1.PodGroupReasonUnschedulable
	ReasonSchedulerError = schedulingv1beta1.PodGroupReasonSchedulerError
)

// Observe reads a PodGroup read through NewPodGroup or created from Gang.PodGroup.
func Observe(o client.Object) (Observed, error) {
	pg, ok := o.(*schedulingv1beta1.PodGroup)
	if !ok {
		return Observed{}, fmt.Errorf("observe PodGroup: got %T, want a %s PodGroup", o, GroupVersion)
	}
	var out Observed
	if ref := metav1.GetControllerOf(pg); ref != nil {
		out.ControllerUID = ref.UID
	}
	if gang := pg.Spec.SchedulingPolicy.Gang; gang != nil {
		out.Gang, out.MinCount = true, gang.MinCount
	}
	if c := pg.Spec.SchedulingConstraints; c != nil && len(c.Topology) > 0 {
		out.TopologyKey = c.Topology[0].Key
	}
	if c := meta.FindStatusCondition(pg.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled); c != nil {
		out.Scheduled = c.DeepCopy()
	}
	return out, nil
}

// WithMinCount returns a copy of the PodGroup o with the gang size n: the one field of a gang that the API
// lets change after creation (policy kind and topology are immutable).
func WithMinCount(o client.Object, n int32) (client.Object, error) {
	pg, ok := o.(*schedulingv1beta1.PodGroup)
	if !ok {
		return nil, fmt.Errorf("set PodGroup minCount: got %T, want a %s PodGroup", o, GroupVersion)
	}
	if pg.Spec.SchedulingPolicy.Gang == nil {
		return nil, fmt.Errorf("set PodGroup %s/%s minCount: its policy is not a gang, and a policy cannot change", pg.Namespace, pg.Name)
	}
	out := pg.DeepCopy()
	out.Spec.SchedulingPolicy.Gang.MinCount = n
	return out, nil
}

// PodGroupName is the PodGroup a pod joins, from spec.schedulingGroup.podGroupName; empty when none.
// (The pod field is core/v1's, but it exists only with the Workload API and changes with it.)
func PodGroupName(spec *corev1.PodSpec) string {
	if spec == nil || spec.SchedulingGroup == nil {
		return ""
	}
	return ptr.Deref(spec.SchedulingGroup.PodGroupName, "")
}

// JoinPodGroup makes the pod spec join the PodGroup name (spec.schedulingGroup.podGroupName).
func JoinPodGroup(spec *corev1.PodSpec, name string) {
	spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(name)}
}
