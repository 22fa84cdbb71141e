package computedomain

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// NodeLabeler sets and removes the per-domain labels on the plugin's own Node.
type NodeLabeler interface {
	// DomainLabels returns the UIDs of the domains whose label the node has.
	DomainLabels(ctx context.Context) ([]types.UID, error)
	// SetDomainLabels adds (true) or removes (false) the labels of the given
	// domains in one write.
	SetDomainLabels(ctx context.Context, labels map[types.UID]bool) error
}

// ClientNodeLabeler patches the Node through a clientset.
type ClientNodeLabeler struct {
	Client   kubernetes.Interface
	NodeName string
}

// DomainLabels implements NodeLabeler.
func (l ClientNodeLabeler) DomainLabels(ctx context.Context) ([]types.UID, error) {
	node, err := l.Client.CoreV1().Nodes().Get(ctx, l.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read node %s: %w", l.NodeName, err)
	}
	var uids []types.UID
	for k := range node.Labels {
		if uid, ok := strings.CutPrefix(k, apiv1beta1.ComputeDomainNodeLabelPrefix); ok {
			uids = append(uids, types.UID(uid))
		}
	}
	return uids, nil
}

// SetDomainLabels implements NodeLabeler with one JSON merge patch (null
// removes a label), so it never conflicts with other writers of the Node.
func (l ClientNodeLabeler) SetDomainLabels(ctx context.Context, labels map[types.UID]bool) error {
	if len(labels) == 0 {
		return nil
	}
	patch := map[string]any{}
	for uid, set := range labels {
		if set {
			patch[apiv1beta1.ComputeDomainNodeLabel(uid)] = "true"
		} else {
			patch[apiv1beta1.ComputeDomainNodeLabel(uid)] = nil
		}
	}
	raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": patch}})
	if err != nil {
		return err
	}
	if _, err := l.Client.CoreV1().Nodes().Patch(ctx, l.NodeName, types.MergePatchType, raw, metav1.PatchOptions{FieldManager: "compute-domain-kubelet-plugin"}); err != nil {
		return fmt.Errorf("label node %s: %w", l.NodeName, err)
	}
	return nil
}
