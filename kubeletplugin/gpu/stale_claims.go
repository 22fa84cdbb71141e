package gpu

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// CleanupStaleClaims unprepares claims whose ResourceClaim no longer exists
// (or was recreated under the same name with a new UID): the kubelet will
// never ask to unprepare them, and their devices would stay blocked.
func (d *Driver) CleanupStaleClaims(ctx context.Context) error {
	if d.claims == nil {
		return nil
	}
	logger := klog.FromContext(ctx)
	d.mu.Lock()
	type ref struct{ uid, namespace, name string }
	var refs []ref
	for uid, cs := range d.state.Claims {
		refs = append(refs, ref{uid, cs.Namespace, cs.Name})
	}
	d.mu.Unlock()

	var errs []error
	for _, r := range refs {
		claim, err := d.claims.GetResourceClaim(ctx, r.namespace, r.name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("get claim %s/%s: %w", r.namespace, r.name, err))
			continue
		case claim.UID != types.UID(r.uid):
		default:
			continue // still there
		}
		d.mu.Lock()
		cs, ok := d.state.Claims[r.uid]
		var uerr error
		if ok {
			uerr = d.undoClaim(ctx, r.uid, cs)
		}
		d.metrics.setDeviceStates(d.deviceStates())
		d.mu.Unlock()
		if uerr != nil {
			errs = append(errs, fmt.Errorf("clean up claim %s: %w", r.uid, uerr))
			continue
		}
		if ok {
			logger.Info("Cleaned up a claim whose ResourceClaim is gone", "claim", klog.KRef(r.namespace, r.name), "claimUID", r.uid)
		}
	}
	return errors.Join(errs...)
}
