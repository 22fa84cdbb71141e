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

package draplugin

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
)

// ClaimGetter reads a ResourceClaim (ClaimClient in production).
type ClaimGetter interface {
	GetResourceClaim(ctx context.Context, namespace, name string) (*resourceapi.ResourceClaim, error)
}

// UnprepareFunc undoes one recorded claim and forgets it.
type UnprepareFunc func(ctx context.Context, uid string, cs checkpoint.ClaimState) error

// CleanupStaleClaims unprepares every claim of ledger whose ResourceClaim no
// longer exists, or was recreated under the same name with a new UID: the
// kubelet will never unprepare those, and what they hold would stay blocked.
// mu guards ledger: it is released while the API is read and held while
// unprepare runs, which it does only for a claim the ledger still records. A
// nil getter cleans up nothing. Claims whose ResourceClaim cannot be read are
// kept; every error is returned, joined, after all claims were tried.
func CleanupStaleClaims(ctx context.Context, getter ClaimGetter, mu sync.Locker, ledger *checkpoint.Ledger, unprepare UnprepareFunc) error {
	if getter == nil {
		return nil
	}
	mu.Lock()
	claims := ledger.Claims() // copy-on-write: safe to read unlocked
	mu.Unlock()
	var errs []error
	for uid, cs := range claims {
		claim, err := getter.GetResourceClaim(ctx, cs.Namespace, cs.Name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("get claim %s/%s: %w", cs.Namespace, cs.Name, err))
			continue
		case claim.UID != types.UID(uid):
		default:
			continue // still there
		}
		cleaned, err := unprepareRecorded(ctx, mu, ledger, uid, unprepare)
		if err != nil {
			errs = append(errs, fmt.Errorf("clean up claim %s: %w", uid, err))
			continue
		}
		if cleaned {
			klog.FromContext(ctx).Info("Cleaned up a claim whose ResourceClaim is gone", "claim", klog.KRef(cs.Namespace, cs.Name), "claimUID", uid)
		}
	}
	return errors.Join(errs...)
}

// unprepareRecorded unprepares uid under mu if the ledger still records it
// (the kubelet may have unprepared it meanwhile).
func unprepareRecorded(ctx context.Context, mu sync.Locker, ledger *checkpoint.Ledger, uid string, unprepare UnprepareFunc) (bool, error) {
	mu.Lock()
	defer mu.Unlock()
	cs, ok := ledger.Claims()[uid]
	if !ok {
		return false, nil
	}
	return true, unprepare(ctx, uid, cs)
}

// SweepStaleClaims runs sweep at once, for claims deleted while the plugin
// was down, and then every interval until ctx ends. A failed sweep is logged;
// the next one retries.
func SweepStaleClaims(ctx context.Context, clk clock.WithTicker, interval time.Duration, sweep func(context.Context) error) {
	logger := klog.FromContext(ctx)
	t := clk.NewTicker(interval)
	defer t.Stop()
	for {
		if err := sweep(ctx); err != nil {
			logger.Error(err, "Stale claim cleanup failed")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}
