package computedomain

import (
	"context"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
)

// ClaimGetter reads a ResourceClaim (draplugin.ClaimClient in production).
type ClaimGetter interface {
	GetResourceClaim(ctx context.Context, namespace, name string) (*resourceapi.ResourceClaim, error)
}

// CleanupStaleClaims unprepares claims whose ResourceClaim no longer exists
// (or was recreated under the same name with a new UID): the kubelet will
// never unprepare them, and their CDI specs and slots would stay behind.
func (d *Driver) CleanupStaleClaims(ctx context.Context) error {
	if d.claims == nil {
		return nil
	}
	d.mu.Lock()
	claims := d.state.Claims // copy-on-write: saves replace the map, never change it
	d.mu.Unlock()
	return draplugin.CleanupStaleClaims(ctx, d.claims, claims, func(ctx context.Context, uid string) (bool, error) {
		d.mu.Lock()
		defer d.mu.Unlock()
		return true, d.unprepareClaim(ctx, uid)
	})
}
