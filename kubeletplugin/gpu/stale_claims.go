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

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
)

// CleanupStaleClaims unprepares claims whose ResourceClaim no longer exists
// (or was recreated under the same name with a new UID): the kubelet will
// never ask to unprepare them, and their devices would stay blocked.
func (d *Driver) CleanupStaleClaims(ctx context.Context) error {
	return draplugin.CleanupStaleClaims(ctx, d.claims, &d.state.mu, d.state.ledger, func(ctx context.Context, uid string, cs checkpoint.ClaimState) error {
		defer d.updateDeviceMetricsLocked()
		defer d.syncUsageLocked(ctx)
		return d.undoClaim(ctx, uid, cs)
	})
}
