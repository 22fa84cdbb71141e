package computedomain

import (
	"context"
	"errors"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// ClaimGetter reads a ResourceClaim (draplugin.ClaimClient in production).
type ClaimGetter interface {
	GetResourceClaim(ctx context.Context, namespace, name string) (*resourceapi.ResourceClaim, error)
}

// CleanupStaleClaims unprepares claims whose ResourceClaim no longer exists
// (or was recreated under the same name with a new UID): the kubelet will
// never unprepare them, and their node label and slots would stay behind.
func (d *Driver) CleanupStaleClaims(ctx context.Context) error {
	if d.claims == nil {
		return nil
	}
	type ref struct{ uid, namespace, name string }
	d.mu.Lock()
	refs := make([]ref, 0, len(d.state.Claims))
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
		err = d.unprepareClaim(ctx, r.uid)
		d.mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("clean up claim %s: %w", r.uid, err))
			continue
		}
		klog.FromContext(ctx).Info("Cleaned up a claim whose ResourceClaim is gone", "claim", klog.KRef(r.namespace, r.name), "claimUID", r.uid)
	}
	return errors.Join(errs...)
}
