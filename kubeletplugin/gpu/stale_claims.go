package gpu

import (
	"context"

	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
)

// CleanupStaleClaims unprepares claims whose ResourceClaim no longer exists
// (or was recreated under the same name with a new UID): the kubelet will
// never ask to unprepare them, and their devices would stay blocked.
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
		defer func() { d.metrics.setDeviceStates(d.deviceStates()) }()
		cs, ok := d.state.Claims[uid]
		if !ok {
			return false, nil
		}
		return true, d.undoClaim(ctx, uid, cs)
	})
}
