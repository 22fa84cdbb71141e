package gpu

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// CliqueLabel is the node label this plugin owns: the node's NVLink clique
// "<clusterUUID>.<cliqueId>", absent on nodes without one.
const CliqueLabel = "nvidia.com/gpu.clique"

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

// RefreshClique re-reads the node's clique; when it changed, the devices are
// republished with the new cliqueID and the node label follows.
func (d *Driver) RefreshClique(ctx context.Context) error {
	raw, err := nvml.NodeCliqueID(d.nvml)
	clique, err := cliqueOrNone(ctx, raw, err)
	if err != nil {
		return err
	}
	d.mu.Lock()
	changed := clique != d.inventory.CliqueID
	d.inventory.CliqueID = clique
	d.mu.Unlock()
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
// is configured.
func (d *Driver) SyncCliqueLabel(ctx context.Context) error {
	if d.labeler == nil {
		return nil
	}
	d.mu.Lock()
	clique := d.inventory.CliqueID
	d.mu.Unlock()
	return d.labeler.SetNodeClique(ctx, clique)
}
