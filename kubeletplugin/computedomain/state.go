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
	"sync"

	"k8s.io/utils/clock"

	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
)

// nodeState is the node's compute-domain claims and what preparing them
// changes: the checkpoint (under one lock, with the claims gauge kept in
// step), the per-claim CDI specs, the IMEX channel device nodes and the
// domains' IMEX config directories. Prepare, Unprepare and UnprepareStale are
// its behavior (prepare.go, unprepare.go, stale_claims.go); the Driver only
// adapts the kubelet's calls to them.
type nodeState struct {
	cfg     Config
	root    hostroot.Root
	cdi     *cdi.Writer
	domains DomainLookup
	clock   clock.WithTicker
	metrics *Metrics

	// mu guards ledger and released and serializes the steps of prepare,
	// unprepare and the stale-claim cleanup (the helper calls them
	// concurrently: a channel claim waits for its domain without it).
	mu     sync.Mutex
	ledger *checkpoint.Ledger
	// released is closed, and replaced, whenever a claim leaves the ledger:
	// a channel claim waiting for a channel that another domain's claim
	// still holds on the node wakes then.
	released chan struct{}
	crash    draplugin.CrashHook
}

// newNodeState loads the checkpoint (discarding state of an earlier boot) and
// removes the IMEX config directories no recorded daemon claim holds.
func newNodeState(ctx context.Context, cfg Config, deps Deps) (*nodeState, error) {
	ledger, err := checkpoint.OpenLedger(ctx, deps.Checkpoint)
	if err != nil {
		return nil, err
	}
	s := &nodeState{
		cfg: cfg, root: cfg.HostRoot, cdi: deps.CDI, ledger: ledger,
		domains: deps.Domains, clock: deps.Clock, metrics: deps.Metrics, released: make(chan struct{}), crash: deps.Crash,
	}
	s.metrics.setClaims(ledger.Claims())
	if err := s.removeOrphanConfigDirs(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// saveClaim records one claim's state and keeps the claims gauge in step.
// Callers hold s.mu.
func (s *nodeState) saveClaim(uid string, cs checkpoint.ClaimState) error {
	if err := s.ledger.SaveClaim(uid, cs); err != nil {
		return err
	}
	s.metrics.setClaims(s.ledger.Claims())
	return nil
}

// releasedChannel returns the channel that the next claim leaving the ledger
// closes.
func (s *nodeState) releasedChannel() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.released
}

// deleteClaim forgets one claim and keeps the claims gauge in step. Callers
// hold s.mu.
func (s *nodeState) deleteClaim(uid string) error {
	if err := s.ledger.DeleteClaim(uid); err != nil {
		return err
	}
	s.metrics.setClaims(s.ledger.Claims())
	close(s.released)
	s.released = make(chan struct{})
	return nil
}
