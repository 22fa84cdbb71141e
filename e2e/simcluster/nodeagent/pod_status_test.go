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

package nodeagent

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testPod(restart corev1.RestartPolicy) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"},
		Spec: corev1.PodSpec{
			RestartPolicy: restart,
			Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
		},
	}
}

type statusSummary struct {
	Phase      corev1.PodPhase
	PodIP      string
	HostIP     string
	Conditions map[corev1.PodConditionType]corev1.ConditionStatus
	Running    map[string]bool
	ExitCodes  map[string]int32
}

func summarize(s corev1.PodStatus) statusSummary {
	out := statusSummary{Phase: s.Phase, PodIP: s.PodIP, HostIP: s.HostIP, Conditions: map[corev1.PodConditionType]corev1.ConditionStatus{},
		Running: map[string]bool{}, ExitCodes: map[string]int32{}}
	for _, c := range s.Conditions {
		out.Conditions[c.Type] = c.Status
	}
	for _, c := range s.ContainerStatuses {
		out.Running[c.Name] = c.State.Running != nil
		if c.State.Terminated != nil {
			out.ExitCodes[c.Name] = c.State.Terminated.ExitCode
		}
	}
	return out
}

func TestPodStatusTransitions(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC))
	running := func(p *corev1.Pod) *corev1.Pod {
		p.Status = runningStatus(p, "127.0.1.1", "127.1.1.7", now, nil)
		return p
	}
	cases := map[string]struct {
		status func() corev1.PodStatus
		want   statusSummary
	}{
		"a started pod is Running and Ready on its own address, keeping PodScheduled": {
			status: func() corev1.PodStatus {
				return runningStatus(testPod(corev1.RestartPolicyAlways), "127.0.1.1", "127.1.1.7", now, nil)
			},
			want: statusSummary{Phase: corev1.PodRunning, PodIP: "127.1.1.7", HostIP: "127.0.1.1",
				Conditions: map[corev1.PodConditionType]corev1.ConditionStatus{
					corev1.PodScheduled: corev1.ConditionTrue, corev1.PodReadyToStartContainers: corev1.ConditionTrue,
					corev1.PodInitialized: corev1.ConditionTrue, corev1.ContainersReady: corev1.ConditionTrue, corev1.PodReady: corev1.ConditionTrue,
				},
				Running: map[string]bool{"main": true}, ExitCodes: map[string]int32{}},
		},
		"a finished job pod Succeeded and is no longer Ready": {
			status: func() corev1.PodStatus {
				return terminatedStatus(running(testPod(corev1.RestartPolicyNever)), 0, "Completed", now)
			},
			want: statusSummary{Phase: corev1.PodSucceeded, PodIP: "127.1.1.7", HostIP: "127.0.1.1",
				Conditions: map[corev1.PodConditionType]corev1.ConditionStatus{
					corev1.PodScheduled: corev1.ConditionTrue, corev1.PodReadyToStartContainers: corev1.ConditionTrue,
					corev1.PodInitialized: corev1.ConditionTrue, corev1.ContainersReady: corev1.ConditionFalse, corev1.PodReady: corev1.ConditionFalse,
				},
				Running: map[string]bool{"main": false}, ExitCodes: map[string]int32{"main": 0}},
		},
		"a non-zero exit fails the pod": {
			status: func() corev1.PodStatus {
				return terminatedStatus(running(testPod(corev1.RestartPolicyNever)), 3, "Error", now)
			},
			want: statusSummary{Phase: corev1.PodFailed, PodIP: "127.1.1.7", HostIP: "127.0.1.1",
				Conditions: map[corev1.PodConditionType]corev1.ConditionStatus{
					corev1.PodScheduled: corev1.ConditionTrue, corev1.PodReadyToStartContainers: corev1.ConditionTrue,
					corev1.PodInitialized: corev1.ConditionTrue, corev1.ContainersReady: corev1.ConditionFalse, corev1.PodReady: corev1.ConditionFalse,
				},
				Running: map[string]bool{"main": false}, ExitCodes: map[string]int32{"main": 3}},
		},
		"a pod whose claims are not prepared waits in Pending": {
			status: func() corev1.PodStatus {
				return waitingStatus(testPod(corev1.RestartPolicyAlways), "ContainerCreating", "prepare failed")
			},
			want: statusSummary{Phase: corev1.PodPending,
				Conditions: map[corev1.PodConditionType]corev1.ConditionStatus{corev1.PodScheduled: corev1.ConditionTrue},
				Running:    map[string]bool{"main": false}, ExitCodes: map[string]int32{}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, summarize(tc.status())); diff != "" {
				t.Errorf("status mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunsToCompletion(t *testing.T) {
	cases := map[corev1.RestartPolicy]bool{
		corev1.RestartPolicyAlways:    false,
		corev1.RestartPolicyNever:     true,
		corev1.RestartPolicyOnFailure: true,
	}
	for policy, want := range cases {
		if got := runsToCompletion(testPod(policy)); got != want {
			t.Errorf("runsToCompletion(%s) = %v, want %v", policy, got, want)
		}
	}
}
