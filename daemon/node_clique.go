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

package daemon

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nodeCliquePoll is how often a long-lived daemon reads its Node again while the Node has no clique label.
const nodeCliquePoll = time.Second

// WaitForNodeClique returns the NVLink clique of node from its label (the GPU kubelet plugin sets it when it
// starts), reading the Node again until the label is there or ctx ends. The long-lived daemon
// starts on nodes that have the label, but may start before the GPU plugin wrote it after a reinstall.
func WaitForNodeClique(ctx context.Context, c client.Reader, node, label string) (string, error) {
	logger := klog.FromContext(ctx)
	for waited := false; ; waited = true {
		var n corev1.Node
		err := c.Get(ctx, client.ObjectKey{Name: node}, &n)
		if err == nil && n.Labels[label] != "" {
			return n.Labels[label], nil
		}
		if !waited {
			logger.Info("Waiting for the node's NVLink clique label", "node", node, "label", label, "err", err)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("node %s has no clique label %s: %w", node, label, ctx.Err())
		case <-time.After(nodeCliquePoll):
		}
	}
}
