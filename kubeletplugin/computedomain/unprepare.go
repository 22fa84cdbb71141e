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

package computedomain

import (
	"context"
	"errors"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// Unprepare unprepares the claims under the state's lock. It works from the
// checkpoint alone and never calls the API: a deleted domain cannot keep a pod
// from terminating.
func (s *nodeState) Unprepare(ctx context.Context, claimUIDs []types.UID) map[types.UID]error {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[types.UID]error, len(claimUIDs))
	for _, uid := range claimUIDs {
		out[uid] = s.unprepareClaim(ctx, string(uid))
	}
	return out
}

func (s *nodeState) unprepareClaim(ctx context.Context, uid string) error {
	logger := klog.FromContext(ctx).WithValues("claimUID", uid)
	cs, ok := s.ledger.Claims()[uid]
	if !ok {
		logger.V(2).Info("Claim not prepared here, nothing to undo")
		return nil
	}
	data, _ := claimData(cs.Devices)
	if err := s.cdi.Delete(uid); err != nil {
		return fmt.Errorf("unprepare claim %s: %w", uid, err)
	}
	s.crash.At("unprepare-cdi-deleted")
	if err := s.deleteClaim(uid); err != nil {
		return fmt.Errorf("unprepare claim %s: %w", uid, err)
	}
	// A kill here leaves the domain's IMEX config directory without a claim: the next start removes it.
	s.crash.At("unprepare-claim-deleted")
	if data.Kind != apiv1beta1.DeviceTypeDaemon || data.DomainUID == "" || s.domainHasClaims(data.DomainUID, data.Kind) {
		return nil
	}
	// The domain's last daemon claim on this node: its IMEX config goes.
	if err := os.RemoveAll(s.domainConfigDir(data.DomainUID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		logger.Error(err, "Removing the domain's IMEX config directory failed", "domainUID", data.DomainUID)
	}
	return nil
}

// domainHasClaims tells whether the checkpoint holds a claim of the given
// kind for the domain, in any state.
func (s *nodeState) domainHasClaims(uid types.UID, kind string) bool {
	for _, cs := range s.ledger.Claims() {
		if data, ok := claimData(cs.Devices); ok && data.DomainUID == uid && data.Kind == kind {
			return true
		}
	}
	return false
}
