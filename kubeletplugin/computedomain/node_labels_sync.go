package computedomain

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// ensureLabel labels the node for the domain unless it already is (one
// write per domain and node, not per prepare call).
func (d *Driver) ensureLabel(ctx context.Context, uid types.UID) error {
	if d.labeled[uid] {
		return nil
	}
	return d.setLabels(ctx, map[types.UID]bool{uid: true})
}

func (d *Driver) setLabels(ctx context.Context, labels map[types.UID]bool) error {
	d.metrics.labelWrites.Inc()
	if err := d.labeler.SetDomainLabels(ctx, labels); err != nil {
		return err
	}
	for uid, set := range labels {
		if set {
			d.labeled[uid] = true
		} else {
			delete(d.labeled, uid)
		}
	}
	klog.FromContext(ctx).V(2).Info("Updated the node's domain labels", "labels", labels)
	return nil
}

// SyncLabels makes the node's domain labels match the checkpoint: a domain
// keeps its label while it exists and a workload claim of it is recorded
// here; labels of deleted domains and of domains without such a claim go;
// missing ones are restored. At most one write.
func (d *Driver) SyncLabels(ctx context.Context) error {
	current, err := d.labeler.DomainLabels(ctx)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	want := map[types.UID]bool{}
	for _, cs := range d.state.Claims {
		if data, ok := claimData(cs.Devices); ok && data.Kind == apiv1beta1.DeviceTypeChannel {
			want[data.DomainUID] = true
		}
	}
	var errs []error
	for uid := range want {
		domain, err := d.domains.DomainByUID(ctx, uid)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if domain == nil {
			delete(want, uid)
		}
	}
	change := map[types.UID]bool{}
	have := map[types.UID]bool{}
	for _, uid := range current {
		have[uid] = true
		if !want[uid] {
			change[uid] = false
		}
	}
	for uid := range want {
		if !have[uid] {
			change[uid] = true
		}
	}
	d.labeled = have
	if len(change) > 0 {
		if err := d.setLabels(ctx, maps.Clone(change)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sync node labels: %w", err)
	}
	return nil
}
