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

package workloadapi

import (
	"fmt"

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CompositeGroupVersion is the version of the Workload API that serves CompositePodGroups (Kubernetes 1.37:
// alpha, gate CompositePodGroup, --runtime-config=scheduling.k8s.io/v1alpha3=true).
var CompositeGroupVersion = schedulingv1alpha3.SchemeGroupVersion

// CompositeResource is the CompositePodGroup resource of CompositeGroupVersion.
const CompositeResource = "compositepodgroups"

// Template names in a sliced gang's Workload: the composite template and its per-slice PodGroup template.
const (
	SlicesTemplate = "slices"
	SliceTemplate  = "slice"
)

// SlicedGang is the gang of gangs the operator wants for a workload larger than one topology domain: a
// CompositePodGroup whose gang policy needs every one of its slice PodGroups placeable at once, each slice a gang
// of its own pods, all on nodes that share one value of TopologyKey. The Workload, the CompositePodGroup and the
// slice PodGroups all carry Name's Workload reference, as the scheduler requires of one hierarchy.
type SlicedGang struct {
	Namespace string
	// Name names the Workload and the CompositePodGroup.
	Name string
	// Slices are the slice PodGroups, in slice order.
	Slices []Slice
	// TopologyKey is the node label whose value each slice's pods share (the NVLink clique label).
	TopologyKey string
	Labels      map[string]string
	Annotations map[string]string
	// Owner is the controller owner reference of every object.
	Owner metav1.OwnerReference
}

// Slice is one slice PodGroup of a SlicedGang: a gang of MinCount pods.
type Slice struct {
	Name     string
	MinCount int32
}

func (g SlicedGang) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace: g.Namespace, Name: name, Labels: g.Labels, Annotations: g.Annotations,
		OwnerReferences: []metav1.OwnerReference{g.Owner},
	}
}

func (g SlicedGang) topology() []schedulingv1beta1.TopologyConstraint {
	return []schedulingv1beta1.TopologyConstraint{{Key: g.TopologyKey}}
}

// Workload is the scheduling.k8s.io Workload the composite and slice groups reference: one composite template
// (a gang of len(Slices) groups) of one slice template (a gang of the first, largest slice's size in one
// topology domain). Its controllerRef names the owner.
func (g SlicedGang) Workload() client.Object {
	return &schedulingv1beta1.Workload{
		TypeMeta:   metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "Workload"},
		ObjectMeta: g.meta(g.Name),
		Spec: schedulingv1beta1.WorkloadSpec{
			ControllerRef: &schedulingv1beta1.TypedLocalObjectReference{APIGroup: apiGroup(g.Owner.APIVersion), Kind: g.Owner.Kind, Name: g.Owner.Name},
			CompositePodGroupTemplates: []schedulingv1beta1.CompositePodGroupTemplate{{
				Name: SlicesTemplate,
				SchedulingPolicy: schedulingv1beta1.CompositePodGroupSchedulingPolicy{
					Gang: &schedulingv1beta1.CompositeGangSchedulingPolicy{MinGroupCount: int32(len(g.Slices))},
				},
				PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{{
					Name:                  SliceTemplate,
					SchedulingPolicy:      schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: g.Slices[0].MinCount}},
					SchedulingConstraints: &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: g.topology()},
				}},
			}},
		},
	}
}

// CompositePodGroup is the root of the hierarchy: a gang of all the slices.
func (g SlicedGang) CompositePodGroup() client.Object {
	return &schedulingv1alpha3.CompositePodGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: CompositeGroupVersion.String(), Kind: "CompositePodGroup"},
		ObjectMeta: g.meta(g.Name),
		Spec: schedulingv1alpha3.CompositePodGroupSpec{
			WorkloadRef: &schedulingv1alpha3.WorkloadReference{WorkloadName: g.Name, TemplateName: SlicesTemplate},
			SchedulingPolicy: schedulingv1alpha3.CompositePodGroupSchedulingPolicy{
				Gang: &schedulingv1alpha3.CompositeGangSchedulingPolicy{MinGroupCount: int32(len(g.Slices))},
			},
		},
	}
}

// SlicePodGroup is slice i's PodGroup: a gang of its pods in one topology domain, child of the composite.
func (g SlicedGang) SlicePodGroup(i int) client.Object {
	s := g.Slices[i]
	return &schedulingv1beta1.PodGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "PodGroup"},
		ObjectMeta: g.meta(s.Name),
		Spec: schedulingv1beta1.PodGroupSpec{
			ParentCompositePodGroupName: ptr.To(g.Name),
			WorkloadRef:                 &schedulingv1beta1.WorkloadReference{WorkloadName: g.Name, TemplateName: SliceTemplate},
			SchedulingPolicy:            schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: s.MinCount}},
			SchedulingConstraints:       &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: g.topology()},
		},
	}
}

// apiGroup is the group of an apiVersion ("group/version", or "version" for the core group).
func apiGroup(apiVersion string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return ""
	}
	return gv.Group
}

// NewCompositePodGroup returns an empty CompositePodGroup to read into and to configure caches and watches with.
func NewCompositePodGroup() client.Object { return &schedulingv1alpha3.CompositePodGroup{} }

// NewWorkload returns an empty Workload to read into.
func NewWorkload() client.Object { return &schedulingv1beta1.Workload{} }

// ObservedComposite is what a CompositePodGroup says, as stored and as the scheduler reported on it.
type ObservedComposite struct {
	// Gang tells whether its policy is a gang; MinGroupCount is then how many child groups it needs at once.
	Gang          bool
	MinGroupCount int32
	// Scheduled is the scheduler's CompositePodGroupInitiallyScheduled condition, nil until it reported one.
	Scheduled *metav1.Condition
}

// CompositeScheduled is the condition the scheduler sets on a CompositePodGroup it placed or could not place.
const CompositeScheduled = "CompositePodGroupInitiallyScheduled"

// ObserveComposite reads a CompositePodGroup read through NewCompositePodGroup or made by SlicedGang.
func ObserveComposite(o client.Object) (ObservedComposite, error) {
	cpg, ok := o.(*schedulingv1alpha3.CompositePodGroup)
	if !ok {
		return ObservedComposite{}, fmt.Errorf("observe CompositePodGroup: got %T, want a %s CompositePodGroup", o, CompositeGroupVersion)
	}
	var out ObservedComposite
	if gang := cpg.Spec.SchedulingPolicy.Gang; gang != nil {
		out.Gang, out.MinGroupCount = true, gang.MinGroupCount
	}
	if c := meta.FindStatusCondition(cpg.Status.Conditions, CompositeScheduled); c != nil {
		out.Scheduled = c.DeepCopy()
	}
	return out, nil
}

// ParentOf is the CompositePodGroup a PodGroup is a child of; empty when none.
func ParentOf(o client.Object) string {
	pg, ok := o.(*schedulingv1beta1.PodGroup)
	if !ok {
		return ""
	}
	return ptr.Deref(pg.Spec.ParentCompositePodGroupName, "")
}
