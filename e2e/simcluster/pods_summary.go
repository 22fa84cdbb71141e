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

package simcluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// PodsSummary describes the pods of a namespace for test failure messages: each pod's phase, node, scheduling
// group and gates, the messages of its conditions that are not true, its containers' waiting reasons and its
// latest warning event of each reason (the kubelet's FailedPrepareDynamicResources, the scheduler's
// FailedScheduling), so that a pod that is late says why.
func PodsSummary(ctx context.Context, client kubernetes.Interface, ns string) string {
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	warnings := podWarnings(ctx, client, ns)
	var parts []string
	for _, p := range pods.Items {
		part := fmt.Sprintf("%s: %s on %q", p.Name, p.Status.Phase, p.Spec.NodeName)
		if g := p.Spec.SchedulingGroup; g != nil && g.PodGroupName != nil {
			part += fmt.Sprintf(" in PodGroup %q", *g.PodGroupName)
		}
		for _, g := range p.Spec.SchedulingGates {
			part += fmt.Sprintf(" gated by %s", g.Name)
		}
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue && c.Message != "" {
				part += fmt.Sprintf(" (%s: %s)", c.Type, c.Message)
			}
		}
		if w := WaitingReasons(&p); w != "" {
			part += " [waiting: " + w + "]"
		}
		for _, w := range warnings[p.Name] {
			part += " [" + w + "]"
		}
		parts = append(parts, part)
	}
	return "pods in " + ns + ": " + strings.Join(parts, "; ")
}

// WaitingReasons lists the reasons and messages of a pod's waiting containers ("" when none waits): a failed
// prepare shows there, as with the kubelet.
func WaitingReasons(pod *corev1.Pod) string {
	var parts []string
	for _, c := range pod.Status.ContainerStatuses {
		if w := c.State.Waiting; w != nil {
			parts = append(parts, fmt.Sprintf("%s %s: %s", c.Name, w.Reason, w.Message))
		}
	}
	return strings.Join(parts, "; ")
}

// PodWarnings lists the latest warning event of each reason of each pod in ns ("" when there is none), for
// failure messages.
func PodWarnings(ctx context.Context, client kubernetes.Interface, ns string) string {
	byPod := podWarnings(ctx, client, ns)
	pods := make([]string, 0, len(byPod))
	for p := range byPod {
		pods = append(pods, p)
	}
	sort.Strings(pods)
	var parts []string
	for _, p := range pods {
		parts = append(parts, p+": "+strings.Join(byPod[p], "; "))
	}
	return strings.Join(parts, "\n")
}

// podWarnings returns, per pod name, the latest Warning event of each reason as "reason ×count at time: message".
func podWarnings(ctx context.Context, client kubernetes.Interface, ns string) map[string][]string {
	events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Pod,type=Warning"})
	if err != nil {
		return map[string][]string{"": {"events: " + err.Error()}}
	}
	latest := map[string]map[string]corev1.Event{}
	for _, e := range events.Items {
		byReason := latest[e.InvolvedObject.Name]
		if byReason == nil {
			byReason = map[string]corev1.Event{}
			latest[e.InvolvedObject.Name] = byReason
		}
		if old, ok := byReason[e.Reason]; !ok || eventTime(e).After(eventTime(old)) {
			byReason[e.Reason] = e
		}
	}
	out := map[string][]string{}
	for pod, byReason := range latest {
		reasons := make([]string, 0, len(byReason))
		for r := range byReason {
			reasons = append(reasons, r)
		}
		sort.Strings(reasons)
		for _, r := range reasons {
			e := byReason[r]
			out[pod] = append(out[pod], fmt.Sprintf("%s ×%d at %s: %s", r, max(e.Count, 1), eventTime(e).UTC().Format("15:04:05.000"), e.Message))
		}
	}
	return out
}

// eventTime is when an event last happened, whichever of its times is set.
func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
