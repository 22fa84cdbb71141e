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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// runsToCompletion: containers of a pod that never restarts, or restarts only
// on failure, exit 0 after the run duration; others run until deleted.
func runsToCompletion(pod *corev1.Pod) bool {
	return pod.Spec.RestartPolicy == corev1.RestartPolicyNever || pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure
}

func containerID(pod *corev1.Pod, name string) string {
	return fmt.Sprintf("simcluster://%s-%s", pod.UID, name)
}

// runningStatus is the status of a pod whose containers all started at
// startedAt, with its own address on a node with the given IP; the
// containers named in unready failed their readiness probe.
func runningStatus(pod *corev1.Pod, nodeIP, podIP string, startedAt metav1.Time, unready map[string]bool) corev1.PodStatus {
	status := *pod.Status.DeepCopy()
	status.Phase = corev1.PodRunning
	status.HostIP = nodeIP
	status.HostIPs = []corev1.HostIP{{IP: nodeIP}}
	status.PodIP = podIP
	status.PodIPs = []corev1.PodIP{{IP: podIP}}
	if status.StartTime == nil {
		status.StartTime = &startedAt
	}
	status.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		status.InitContainerStatuses = append(status.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: containerID(pod, c.Name), Ready: true,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: startedAt, FinishedAt: startedAt, ContainerID: containerID(pod, c.Name),
			}},
		})
	}
	status.ContainerStatuses = nil
	ready, reason := corev1.ConditionTrue, ""
	for _, c := range pod.Spec.Containers {
		status.ContainerStatuses = append(status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: containerID(pod, c.Name),
			Ready: !unready[c.Name], Started: ptrTrue(),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: startedAt}},
		})
		if unready[c.Name] {
			ready, reason = corev1.ConditionFalse, "ContainersNotReady"
		}
	}
	setConditions(&status, startedAt, ready, reason)
	return status
}

// terminatedStatus ends every container with exitCode at finishedAt; phase
// Succeeded for 0, Failed otherwise.
func terminatedStatus(pod *corev1.Pod, exitCode int32, reason string, finishedAt metav1.Time) corev1.PodStatus {
	status := *pod.Status.DeepCopy()
	status.Phase = corev1.PodSucceeded
	if exitCode != 0 {
		status.Phase = corev1.PodFailed
	}
	var statuses []corev1.ContainerStatus
	for _, c := range pod.Spec.Containers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: containerID(pod, c.Name)}
		for _, old := range status.ContainerStatuses {
			if old.Name == c.Name {
				cs = old
			}
		}
		startedAt := finishedAt
		if cs.State.Running != nil {
			startedAt = cs.State.Running.StartedAt
		}
		cs.Ready, cs.Started = false, ptrFalse()
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exitCode, Reason: reason, StartedAt: startedAt, FinishedAt: finishedAt, ContainerID: cs.ContainerID,
		}}
		statuses = append(statuses, cs)
	}
	status.ContainerStatuses = statuses
	setConditions(&status, finishedAt, corev1.ConditionFalse, "PodCompleted")
	return status
}

// waitingStatus reports containers that cannot start yet, with the reason
// and message users see in `kubectl describe`.
func waitingStatus(pod *corev1.Pod, reason, message string) corev1.PodStatus {
	status := *pod.Status.DeepCopy()
	status.Phase = corev1.PodPending
	status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		status.ContainerStatuses = append(status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}},
		})
	}
	return status
}

func setConditions(status *corev1.PodStatus, now metav1.Time, ready corev1.ConditionStatus, reason string) {
	set := func(t corev1.PodConditionType, s corev1.ConditionStatus, reason string) {
		for i := range status.Conditions {
			if status.Conditions[i].Type == t {
				if status.Conditions[i].Status != s {
					status.Conditions[i].LastTransitionTime = now
				}
				status.Conditions[i].Status, status.Conditions[i].Reason = s, reason
				return
			}
		}
		status.Conditions = append(status.Conditions, corev1.PodCondition{Type: t, Status: s, Reason: reason, LastTransitionTime: now})
	}
	set(corev1.PodReadyToStartContainers, corev1.ConditionTrue, "")
	set(corev1.PodInitialized, corev1.ConditionTrue, "")
	set(corev1.ContainersReady, ready, reason)
	set(corev1.PodReady, ready, reason)
}

func ptrTrue() *bool  { b := true; return &b }
func ptrFalse() *bool { b := false; return &b }
