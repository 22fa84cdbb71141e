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

package gpu

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// CliqueLabel is the node label this plugin owns: the node's NVLink clique
// "<clusterUUID>.<cliqueId>", absent on nodes without one.
const CliqueLabel = apiv1beta1.CliqueNodeLabelKey

// CliqueLabeler keeps the node's clique label in line with what NVML reports.
type CliqueLabeler interface {
	SetNodeClique(ctx context.Context, clique string) error
}

// NodeLabeler patches the clique label of one Node.
type NodeLabeler struct {
	Client   kubernetes.Interface
	NodeName string
}

// SetNodeClique sets the label, or removes it when clique is empty, with a
// merge patch that touches no other label.
func (l NodeLabeler) SetNodeClique(ctx context.Context, clique string) error {
	var value any
	if clique != "" {
		value = clique
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{CliqueLabel: value}}})
	if err != nil {
		return err
	}
	if _, err := l.Client.CoreV1().Nodes().Patch(ctx, l.NodeName, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "gpu-kubelet-plugin"}); err != nil {
		return fmt.Errorf("set node label %s=%q on %s: %w", CliqueLabel, clique, l.NodeName, err)
	}
	klog.FromContext(ctx).V(2).Info("Node clique label synced", "node", l.NodeName, "clique", clique)
	return nil
}

// cliqueLabelRetryMin is the first wait before a failed clique label write is
// retried; the wait doubles up to Config.CliqueRefreshInterval.
const cliqueLabelRetryMin = time.Second

// cliqueLabel is the driver's side of the node label: the labeler, a lock
// that serializes writes (so that an older clique never lands after a newer
// one), and the signal that a write failed.
type cliqueLabel struct {
	labeler CliqueLabeler
	mu      sync.Mutex
	// failed holds a token while a failed write awaits its retry.
	failed chan struct{}
}

func newCliqueLabel(l CliqueLabeler) cliqueLabel {
	return cliqueLabel{labeler: l, failed: make(chan struct{}, 1)}
}

// RefreshClique re-reads the node's clique; when it changed, the devices are
// republished with the new cliqueID and the node label follows.
func (d *Driver) RefreshClique(ctx context.Context) error {
	raw, err := nvml.NodeCliqueID(d.nvml)
	clique, err := cliqueOrNone(ctx, raw, err)
	if err != nil {
		return err
	}
	d.state.mu.Lock()
	changed := clique != d.state.inventory.CliqueID
	d.state.inventory.CliqueID = clique
	d.state.mu.Unlock()
	if !changed {
		return nil
	}
	klog.FromContext(ctx).Info("NVLink clique changed", "clique", clique)
	if err := d.Publish(ctx); err != nil {
		return err
	}
	return d.SyncCliqueLabel(ctx)
}

// SyncCliqueLabel writes the current clique to the node label, if a labeler
// is configured. A failed write is retried by Run with back-off until one
// succeeds.
func (d *Driver) SyncCliqueLabel(ctx context.Context) error {
	err := d.writeCliqueLabel(ctx)
	if err != nil {
		select {
		case d.label.failed <- struct{}{}:
		default: // a retry is pending already
		}
	}
	return err
}

func (d *Driver) writeCliqueLabel(ctx context.Context) error {
	if d.label.labeler == nil {
		return nil
	}
	d.label.mu.Lock()
	defer d.label.mu.Unlock()
	inv, _ := d.state.snapshot()
	return d.label.labeler.SetNodeClique(ctx, inv.CliqueID)
}

// retryCliqueLabel retries a failed clique label write until one succeeds,
// waiting cliqueLabelRetryMin and then twice as long each time, at most
// CliqueRefreshInterval; it runs until ctx ends.
func (d *Driver) retryCliqueLabel(ctx context.Context) {
	logger := klog.FromContext(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.label.failed:
		}
		for wait := cliqueLabelRetryMin; ; wait = min(2*wait, d.cfg.CliqueRefreshInterval) {
			select {
			case <-ctx.Done():
				return
			case <-d.clock.After(wait):
			}
			err := d.writeCliqueLabel(ctx)
			if err == nil {
				logger.Info("Node clique label written after a failed write")
				break
			}
			logger.Error(err, "Setting the node clique label failed again; retrying", "retryIn", min(2*wait, d.cfg.CliqueRefreshInterval))
		}
	}
}
