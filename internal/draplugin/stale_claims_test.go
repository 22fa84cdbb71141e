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
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
)

type failingGetter struct{}

func (failingGetter) GetResourceClaim(context.Context, string, string) (*resourceapi.ResourceClaim, error) {
	return nil, errors.New("apiserver unavailable")
}

// forgettingGetter is the API as the kubelet unprepares a claim while the
// sweep reads it: the claim is gone from the API and from the ledger.
type forgettingGetter struct {
	mu     *sync.Mutex
	ledger *checkpoint.Ledger
}

func (g forgettingGetter) GetResourceClaim(_ context.Context, ns, name string) (*resourceapi.ResourceClaim, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for uid, cs := range g.ledger.Claims() {
		if cs.Namespace == ns && cs.Name == name {
			if err := g.ledger.DeleteClaim(uid); err != nil {
				return nil, err
			}
		}
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("resourceclaims"), name)
}

func TestCleanupStaleClaims(t *testing.T) {
	recorded := map[string]checkpoint.ClaimState{
		"uid-live":      {Namespace: "ns", Name: "live", Status: checkpoint.PrepareCompleted},
		"uid-deleted":   {Namespace: "ns", Name: "deleted", Status: checkpoint.PrepareCompleted},
		"uid-recreated": {Namespace: "ns", Name: "recreated", Status: checkpoint.PrepareStarted},
	}
	existing := []*resourceapi.ResourceClaim{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "live", UID: "uid-live"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "recreated", UID: "uid-new"}},
	}
	cases := map[string]struct {
		getter       func(*sync.Mutex, *checkpoint.Ledger) ClaimGetter
		unprepareErr error
		wantCleaned  []string
		wantErr      string
	}{
		"claims that are gone or recreated are cleaned up, a live one is kept": {
			getter: func(*sync.Mutex, *checkpoint.Ledger) ClaimGetter {
				return ClaimClient{Client: fake.NewClientset(existing[0], existing[1])}
			},
			wantCleaned: []string{"uid-deleted", "uid-recreated"},
		},
		"claims whose ResourceClaim cannot be read are kept": {
			getter:  func(*sync.Mutex, *checkpoint.Ledger) ClaimGetter { return failingGetter{} },
			wantErr: "apiserver unavailable",
		},
		"a failed clean-up is reported and the others still run": {
			getter: func(*sync.Mutex, *checkpoint.Ledger) ClaimGetter {
				return ClaimClient{Client: fake.NewClientset(existing[0], existing[1])}
			},
			unprepareErr: errors.New("disk full"),
			wantCleaned:  []string{"uid-deleted", "uid-recreated"},
			wantErr:      "disk full",
		},
		"a claim the kubelet unprepared meanwhile is not unprepared again": {
			getter: func(mu *sync.Mutex, l *checkpoint.Ledger) ClaimGetter { return forgettingGetter{mu: mu, ledger: l} },
		},
		"without a client nothing is cleaned up": {
			getter: func(*sync.Mutex, *checkpoint.Ledger) ClaimGetter { return nil },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ledger := ledgerWith(t, recorded)
			var mu sync.Mutex
			var cleaned []string
			err := CleanupStaleClaims(context.Background(), tc.getter(&mu, ledger), &mu, ledger, func(_ context.Context, uid string, cs checkpoint.ClaimState) error {
				if !mu.TryLock() {
					cleaned = append(cleaned, uid)
				} else {
					mu.Unlock()
					t.Errorf("claim %s unprepared without the state lock", uid)
				}
				if diff := cmp.Diff(recorded[uid], cs); diff != "" {
					t.Errorf("claim %s unprepared with another state than recorded (-want +got):\n%s", uid, diff)
				}
				return tc.unprepareErr
			})
			slices.Sort(cleaned)
			if diff := cmp.Diff(tc.wantCleaned, cleaned); diff != "" {
				t.Errorf("cleaned claims (-want +got):\n%s", diff)
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func ledgerWith(t *testing.T, claims map[string]checkpoint.ClaimState) *checkpoint.Ledger {
	t.Helper()
	store := checkpoint.NewStore(filepath.Join(t.TempDir(), "checkpoint.json"), "boot-1")
	l, err := checkpoint.OpenLedger(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	for uid, cs := range claims {
		if err := l.SaveClaim(uid, cs); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func TestSweepStaleClaimsRunsAtStartAndEveryInterval(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithCancel(context.Background())
	var sweeps atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		SweepStaleClaims(ctx, clk, time.Minute, func(context.Context) error {
			sweeps.Add(1)
			return errors.New("apiserver unavailable") // logged, retried
		})
	}()
	waitFor := func(want int32) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for sweeps.Load() < want {
			if time.Now().After(deadline) {
				t.Fatalf("%d sweeps, want %d", sweeps.Load(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(1) // at start, without waiting an interval
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(time.Minute)
	waitFor(2) // after a failed sweep, the next interval retries
	cancel()
	<-done
}
