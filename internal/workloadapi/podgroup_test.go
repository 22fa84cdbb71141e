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
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestGangPodGroup(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "resource.nvidia.com/v1beta1", Kind: "ComputeDomain", Name: "cd", UID: "uid-1", Controller: ptr.To(true)}
	cases := map[string]struct {
		gang Gang
		want *schedulingv1beta1.PodGroup
	}{
		"a gang in one clique is a gang policy with a topology constraint on the clique label": {
			gang: Gang{Namespace: "ns", Name: "cd", MinCount: 16, TopologyKey: "nvidia.com/gpu.clique",
				Labels: map[string]string{"l": "v"}, Annotations: map[string]string{"a": "b"}, Owner: &owner},
			want: &schedulingv1beta1.PodGroup{
				TypeMeta: metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1beta1", Kind: "PodGroup"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cd", Labels: map[string]string{"l": "v"},
					Annotations: map[string]string{"a": "b"}, OwnerReferences: []metav1.OwnerReference{owner}},
				Spec: schedulingv1beta1.PodGroupSpec{
					SchedulingPolicy:      schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 16}},
					SchedulingConstraints: &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: "nvidia.com/gpu.clique"}}},
				},
			},
		},
		"a gang without a topology key has no constraint and no owner unless given": {
			gang: Gang{Namespace: "ns", Name: "g", MinCount: 2},
			want: &schedulingv1beta1.PodGroup{
				TypeMeta:   metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1beta1", Kind: "PodGroup"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"},
				Spec: schedulingv1beta1.PodGroupSpec{
					SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 2}},
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.gang.PodGroup()); diff != "" {
				t.Errorf("PodGroup (-want +got):\n%s", diff)
			}
		})
	}
}

func TestObserve(t *testing.T) {
	scheduled := metav1.Condition{Type: "PodGroupInitiallyScheduled", Status: metav1.ConditionFalse, Reason: "Unschedulable", Message: "no placement"}
	cases := map[string]struct {
		pg   *schedulingv1beta1.PodGroup
		want Observed
	}{
		"what the operator built reads back as it was built": {
			pg: Gang{Namespace: "ns", Name: "cd", MinCount: 4, TopologyKey: "nvidia.com/gpu.clique",
				Owner: &metav1.OwnerReference{Kind: "ComputeDomain", Name: "cd", UID: "uid-1", Controller: ptr.To(true)}}.PodGroup().(*schedulingv1beta1.PodGroup),
			want: Observed{ControllerUID: "uid-1", Gang: true, MinCount: 4, TopologyKey: "nvidia.com/gpu.clique"},
		},
		"an API server without TopologyAwareWorkloadScheduling dropped the constraint": {
			pg:   Gang{Namespace: "ns", Name: "cd", MinCount: 4}.PodGroup().(*schedulingv1beta1.PodGroup),
			want: Observed{Gang: true, MinCount: 4},
		},
		"a basic policy is no gang, and an owner that is not the controller does not count": {
			pg: &schedulingv1beta1.PodGroup{
				ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: "j", UID: "uid-2"}}},
				Spec:       schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}},
			},
			want: Observed{},
		},
		"the scheduler's verdict is the PodGroupInitiallyScheduled condition": {
			pg: &schedulingv1beta1.PodGroup{
				Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 1}}},
				Status: schedulingv1beta1.PodGroupStatus{Conditions: []metav1.Condition{
					{Type: "DisruptionTarget", Status: metav1.ConditionFalse, Reason: "None"}, scheduled,
				}},
			},
			want: Observed{Gang: true, MinCount: 1, Scheduled: &scheduled},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Observe(tc.pg)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Observe (-want +got):\n%s", diff)
			}
		})
	}
}

func TestObserveRefusesOtherKinds(t *testing.T) {
	if _, err := Observe(&corev1.Pod{}); err == nil {
		t.Error("Observe(Pod) succeeded, want an error naming the kind")
	}
}

func TestWithMinCount(t *testing.T) {
	cases := map[string]struct {
		pg      *schedulingv1beta1.PodGroup
		want    int32
		wantErr bool
	}{
		"a gang's size changes and the original stays as it was": {
			pg:   Gang{Namespace: "ns", Name: "cd", MinCount: 3}.PodGroup().(*schedulingv1beta1.PodGroup),
			want: 16,
		},
		"a basic policy cannot become a gang": {
			pg:      &schedulingv1beta1.PodGroup{Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}}},
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.pg.DeepCopy()
			got, err := WithMinCount(tc.pg, 16)
			if (err != nil) != tc.wantErr {
				t.Fatalf("WithMinCount error %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(before, tc.pg); diff != "" {
				t.Errorf("WithMinCount changed its input (-before +after):\n%s", diff)
			}
			if err != nil {
				return
			}
			obs, err := Observe(got)
			if err != nil {
				t.Fatal(err)
			}
			if obs.MinCount != tc.want {
				t.Errorf("minCount %d, want %d", obs.MinCount, tc.want)
			}
		})
	}
}

func TestPodGroupOfPod(t *testing.T) {
	cases := map[string]struct {
		spec *corev1.PodSpec
		want string
	}{
		"no pod":                           {spec: nil, want: ""},
		"a pod without a scheduling group": {spec: &corev1.PodSpec{}, want: ""},
		"a pod that joined a group":        {spec: func() *corev1.PodSpec { s := &corev1.PodSpec{}; JoinPodGroup(s, "cd"); return s }(), want: "cd"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := PodGroupName(tc.spec); got != tc.want {
				t.Errorf("PodGroupName %q, want %q", got, tc.want)
			}
		})
	}
}
