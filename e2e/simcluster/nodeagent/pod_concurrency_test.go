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
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// TestPodsOfANodePrepareConcurrently: each pod has its own worker, as in the
// kubelet, so one pod's slow prepare does not hold another pod's: here each
// of two claims' prepare waits until the other's has started.
func TestPodsOfANodePrepareConcurrently(t *testing.T) {
	started := map[string]chan struct{}{"claim-a": make(chan struct{}), "claim-b": make(chan struct{})}
	other := map[string]string{"claim-a": "claim-b", "claim-b": "claim-a"}
	once := map[string]*sync.Once{"claim-a": {}, "claim-b": {}}
	plugin := &scriptedPlugin{prepare: func(ctx context.Context, claim *resourceapi.ResourceClaim) error {
		once[claim.Name].Do(func() { close(started[claim.Name]) })
		select {
		case <-started[other[claim.Name]]:
			return nil
		case <-time.After(5 * time.Second):
			return fmt.Errorf("%s was not prepared while %s was", other[claim.Name], claim.Name)
		}
	}}
	n := startTestNode(t, plugin, nil)
	n.createPodWithClaim("a", corev1.RestartPolicyAlways)
	n.createPodWithClaim("b", corev1.RestartPolicyAlways)
	n.eventually("both pods run", 8*time.Second, func() bool {
		return n.phase("a") == corev1.PodRunning && n.phase("b") == corev1.PodRunning
	})
	if prepares, _ := plugin.calls(); len(prepares) != 2 {
		t.Errorf("prepare calls %v, want one per claim: a pod's prepare waited for another pod's to end", prepares)
	}
}
