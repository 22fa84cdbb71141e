package gpu

import (
	"context"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
)

// CleanupStaleClaims unprepares claims whose ResourceClaim no longer exists
// (or was recreated under the same name with a new UID): the kubelet will
// never ask to unprepare them, and their devices would stay blocked.
func (d *Driver) CleanupStaleClaims(ctx context.Context) error {
	return draplugin.CleanupStaleClaims(ctx, d.claims, &d.state.mu, d.state.ledger, func(ctx context.Context, uid string, cs checkpoint.ClaimState) error {
		defer d.updateDeviceMetricsLocked()
		return d.undoClaim(ctx, uid, cs)
	})
}
