package computedomain

import (
	"context"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
)

// CleanupStaleClaims unprepares claims whose ResourceClaim no longer exists
// (or was recreated under the same name with a new UID): the kubelet will
// never unprepare them, and their CDI specs and slots would stay behind.
func (d *Driver) CleanupStaleClaims(ctx context.Context) error {
	return draplugin.CleanupStaleClaims(ctx, d.claims, &d.mu, d.ledger, func(ctx context.Context, uid string, _ checkpoint.ClaimState) error {
		return d.unprepareClaim(ctx, uid)
	})
}
