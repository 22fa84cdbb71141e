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

package checkpoint

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"
)

// Ledger is a plugin's record of its claims: the checkpoint as last saved,
// kept in memory and changed only once the file holds the change. It has no
// lock of its own; the plugin's state lock guards it.
type Ledger struct {
	store *Store
	cp    Checkpoint
}

// OpenLedger loads the store's checkpoint for the current boot. State of an
// earlier boot is discarded, logged, and the discard saved at once, so a crash
// now cannot resurrect it.
func OpenLedger(ctx context.Context, store *Store) (*Ledger, error) {
	cp, res, err := store.Load()
	if err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	if res.DiscardedBootID != "" {
		klog.FromContext(ctx).Info("Discarded checkpoint of an earlier boot", "bootID", res.DiscardedBootID, "claims", res.DiscardedClaims)
		if err := store.Save(cp); err != nil {
			return nil, fmt.Errorf("save checkpoint: %w", err)
		}
	}
	return &Ledger{store: store, cp: cp}, nil
}

// Claims is the recorded state per claim UID. The map is copy-on-write: a
// change replaces it and never alters it, so a caller may keep and read it
// after releasing the lock, but must not change it.
func (l *Ledger) Claims() map[string]ClaimState { return l.cp.Claims }

// Checkpoint is the recorded state; the same copy-on-write rule as Claims.
func (l *Ledger) Checkpoint() Checkpoint { return l.cp }

// SaveClaim records one claim's state; on error nothing changed.
func (l *Ledger) SaveClaim(uid string, cs ClaimState) error {
	next := l.cp.Clone()
	next.Claims[uid] = cs
	if err := l.store.Save(next); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	l.cp = next
	return nil
}

// DeleteClaim forgets one claim; a claim not recorded writes nothing. On error
// nothing changed.
func (l *Ledger) DeleteClaim(uid string) error {
	if _, ok := l.cp.Claims[uid]; !ok {
		return nil
	}
	next := l.cp.Clone()
	delete(next.Claims, uid)
	if err := l.store.Save(next); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	l.cp = next
	return nil
}
