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
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// A finished pod's status rewritten again and again (Kubernetes 1.37.2's resource claim controller re-making its
// claims) brings no pass over its domain; every change up to and including the pod's finish does, and so do its
// creation and deletion.
func TestPodEventsOfAFinishedPodBringNoPass(t *testing.T) {
	pod := func(phase corev1.PodPhase, claim string) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: phase, ResourceClaimStatuses: []corev1.PodResourceClaimStatus{
			{Name: "imex-channel", ResourceClaimName: ptr.To(claim)},
		}}}
	}
	for _, tc := range []struct {
		name     string
		old, new *corev1.Pod
		want     bool
	}{
		{"pending pod's claim made", pod(corev1.PodPending, ""), pod(corev1.PodPending, "c1"), true},
		{"pod starts", pod(corev1.PodPending, "c1"), pod(corev1.PodRunning, "c1"), true},
		{"pod succeeds", pod(corev1.PodRunning, "c1"), pod(corev1.PodSucceeded, "c1"), true},
		{"pod fails", pod(corev1.PodRunning, "c1"), pod(corev1.PodFailed, "c1"), true},
		{"succeeded pod's claim made again", pod(corev1.PodSucceeded, "c1"), pod(corev1.PodSucceeded, "c2"), false},
		{"failed pod's claim made again", pod(corev1.PodFailed, "c1"), pod(corev1.PodFailed, "c2"), false},
	} {
		if got := changedUnlessFinished.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: update passes = %t, want %t", tc.name, got, tc.want)
		}
	}
	finished := pod(corev1.PodSucceeded, "c1")
	if !changedUnlessFinished.Create(event.CreateEvent{Object: finished}) || !changedUnlessFinished.Delete(event.DeleteEvent{Object: finished}) {
		t.Error("a finished pod's create or delete event is dropped")
	}
}
