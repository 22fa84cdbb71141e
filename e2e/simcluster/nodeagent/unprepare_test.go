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
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// TestTerminalPhaseWaitsForUnprepare: a finished pod's claims are
// unprepared before its phase becomes terminal (the claim controller frees a
// claim once its pod is terminal), and the phase is held while unprepare
// fails, as the kubelet's status manager holds it while the DRA manager may
// still need to unprepare.
func TestTerminalPhaseWaitsForUnprepare(t *testing.T) {
	var (
		mu     sync.Mutex
		phases []corev1.PodPhase // the pod's phase at each unprepare call
	)
	plugin := &scriptedPlugin{}
	n := startTestNode(t, plugin, func(c *Config) { c.RunDuration = 200 * time.Millisecond })
	plugin.unprepare = func(ctx context.Context, claim kubeletplugin.NamespacedObject) error {
		mu.Lock()
		defer mu.Unlock()
		phases = append(phases, n.phase("job"))
		if len(phases) == 1 {
			return errors.New("device busy")
		}
		return nil
	}
	n.createPodWithClaim("job", corev1.RestartPolicyNever)

	n.eventually("the pod succeeds", 20*time.Second, func() bool { return n.phase("job") == corev1.PodSucceeded })
	mu.Lock()
	defer mu.Unlock()
	if len(phases) < 2 {
		t.Fatalf("unprepare calls %d, want a failed one and a successful one", len(phases))
	}
	for i, p := range phases {
		if p == corev1.PodSucceeded || p == corev1.PodFailed {
			t.Errorf("unprepare call %d saw the pod's phase %s already terminal: the claim could be freed before its devices were unprepared", i+1, p)
		}
	}
}

// TestUnprepareAfterAFailedPrepare: a pod whose prepare failed is unprepared
// on deletion (the DRA manager records the claim before it calls the plugin),
// and the pod object is removed only after that.
func TestUnprepareAfterAFailedPrepare(t *testing.T) {
	plugin := &scriptedPlugin{prepare: func(context.Context, *resourceapi.ResourceClaim) error { return errors.New("not ready") }}
	n := startTestNode(t, plugin, nil)
	var podPresent []bool
	var mu sync.Mutex
	plugin.unprepare = func(context.Context, kubeletplugin.NamespacedObject) error {
		mu.Lock()
		defer mu.Unlock()
		podPresent = append(podPresent, n.pod("p") != nil)
		return nil
	}
	n.createPodWithClaim("p", corev1.RestartPolicyAlways)
	n.eventually("the first prepare", 10*time.Second, func() bool { p, _ := plugin.calls(); return len(p) > 0 })

	pod := n.pod("p")
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	pod.DeletionGracePeriodSeconds = new(int64)
	if _, err := n.client.CoreV1().Pods("ns").Update(n.ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.eventually("the pod is removed", 10*time.Second, func() bool { return n.pod("p") == nil })
	_, unprepares := plugin.calls()
	if count(unprepares, "claim-p") == 0 {
		t.Fatalf("a claim whose prepare failed was never unprepared (unprepare calls %v)", unprepares)
	}
	mu.Lock()
	defer mu.Unlock()
	if !podPresent[0] {
		t.Errorf("the pod was removed before its claim was unprepared")
	}
}
