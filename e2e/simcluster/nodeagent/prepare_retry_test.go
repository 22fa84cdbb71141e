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
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func failingPrepare(context.Context, *resourceapi.ResourceClaim) error {
	return errors.New("domain not ready")
}

// TestAFailedPrepareWaitsForThePodResync: as the kubelet, a failed prepare
// gives the pod a Warning event FailedPrepareDynamicResources, leaves its
// container Waiting in ContainerCreating, and is not retried before the pod
// resync (60-90 s) unless the pod object changes.
func TestAFailedPrepareWaitsForThePodResync(t *testing.T) {
	plugin := &scriptedPlugin{prepare: failingPrepare}
	n := startTestNode(t, plugin, nil)
	n.createPodWithClaim("p", corev1.RestartPolicyAlways)
	n.eventually("the first prepare", 10*time.Second, func() bool { p, _ := plugin.calls(); return len(p) > 0 })

	n.eventually("a FailedPrepareDynamicResources event", 10*time.Second, func() bool {
		events, err := n.client.CoreV1().Events("ns").List(n.ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, e := range events.Items {
			if e.Reason == "FailedPrepareDynamicResources" && e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == "p" && e.InvolvedObject.Kind == "Pod" {
				return true
			}
		}
		return false
	})
	n.eventually("the container waits in ContainerCreating", 10*time.Second, func() bool {
		p := n.pod("p")
		return p != nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
			p.Status.ContainerStatuses[0].State.Waiting.Reason == "ContainerCreating"
	})
	if w := n.pod("p").Status.ContainerStatuses[0].State.Waiting; w.Message != "" {
		t.Errorf("waiting message %q, want none (the kubelet reports the failure as an event)", w.Message)
	}

	time.Sleep(3 * time.Second)
	if p, _ := plugin.calls(); len(p) != 1 {
		t.Fatalf("prepare calls within 3 s of a failure: %d, want 1 (the kubelet retries at the pod resync, 60-90 s later)", len(p))
	}

	pod := n.pod("p")
	pod.Labels = map[string]string{"changed": "yes"}
	if _, err := n.client.CoreV1().Pods("ns").Update(n.ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.eventually("a retry after the pod object changed", 5*time.Second, func() bool { p, _ := plugin.calls(); return len(p) >= 2 })
}

// TestFastRetryRetriesAFailedPrepareWithinSeconds: the fast mode for
// unit-speed tests retries with the agent's short backoff.
func TestFastRetryRetriesAFailedPrepareWithinSeconds(t *testing.T) {
	plugin := &scriptedPlugin{prepare: failingPrepare}
	n := startTestNode(t, plugin, func(c *Config) { c.FastRetry = true })
	n.createPodWithClaim("p", corev1.RestartPolicyAlways)
	n.eventually("a second prepare", 5*time.Second, func() bool { p, _ := plugin.calls(); return len(p) >= 2 })
}

func TestPodResyncDelayIsTheKubeletsJitteredMinute(t *testing.T) {
	for range 1000 {
		if d := podResyncDelay(); d < 60*time.Second || d > 90*time.Second {
			t.Fatalf("resync delay %v, want 60-90 s", d)
		}
	}
}
