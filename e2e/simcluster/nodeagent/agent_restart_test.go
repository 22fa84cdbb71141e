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

// TestARestartedAgentAdoptsItsRunningPods: as a restarted kubelet, a node
// agent started again on the node's paths reloads the DRA manager's
// checkpoint and adopts a running pod as it is, without preparing its
// claims again or restarting its containers, and unprepares them when the
// pod is deleted.
func TestARestartedAgentAdoptsItsRunningPods(t *testing.T) {
	plugin := &scriptedPlugin{}
	n := startTestNode(t, plugin, nil)
	n.createPodWithClaim("p", corev1.RestartPolicyAlways)
	n.eventually("the pod runs", 10*time.Second, func() bool { return n.phase("p") == corev1.PodRunning })
	before := n.pod("p").Status

	n.stopAgent()
	time.Sleep(1100 * time.Millisecond) // a restart shows in second-granular start times
	n.runAgent()
	time.Sleep(time.Second)

	if prepares, _ := plugin.calls(); len(prepares) != 1 {
		t.Errorf("prepare calls %v, want the one before the restart", prepares)
	}
	after := n.pod("p").Status
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("the restarted agent changed the running pod's status (-before +after):\n%s", diff)
	}

	pod := n.pod("p")
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	pod.DeletionGracePeriodSeconds = new(int64)
	if _, err := n.client.CoreV1().Pods("ns").Update(n.ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.eventually("the pod is removed", 15*time.Second, func() bool { return n.pod("p") == nil })
	if _, unprepares := plugin.calls(); count(unprepares, "claim-p") != 1 {
		t.Errorf("unprepare calls %v, want claim-p once", unprepares)
	}
}
