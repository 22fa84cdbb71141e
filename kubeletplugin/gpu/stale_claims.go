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

// UnprepareStale unprepares claims whose ResourceClaim no longer exists (or
// was recreated under the same name with a new UID): the kubelet will never
// ask to unprepare them, and their devices would stay blocked. A nil getter
// does nothing.
func (s *nodeState) UnprepareStale(ctx context.Context, claims draplugin.ClaimGetter) error {
	return draplugin.CleanupStaleClaims(ctx, claims, &s.mu, s.ledger, func(ctx context.Context, uid string, cs checkpoint.ClaimState) error {
		defer s.updateDeviceMetricsLocked()
		defer s.syncUsageLocked(ctx)
		return s.undoClaim(ctx, uid, cs)
	})
}
