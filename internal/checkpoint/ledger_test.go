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
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2/ktesting"
)

// openSampleLedger stores sampleCheckpoint("boot-1") at path and opens it.
func openSampleLedger(t *testing.T, path string) *Ledger {
	t.Helper()
	if err := NewStore(path, "boot-1").Save(sampleCheckpoint("boot-1")); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLedger(context.Background(), NewStore(path, "boot-1"))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestOpenLedger(t *testing.T) {
	cases := map[string]struct {
		storedBoot string
		want       map[string]ClaimState
	}{
		"state of this boot is kept": {
			storedBoot: "boot-1",
			want:       sampleCheckpoint("boot-1").Claims,
		},
		"state of an earlier boot is discarded, on disk too": {
			storedBoot: "boot-0",
			want:       map[string]ClaimState{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "checkpoint.json")
			if err := NewStore(path, tc.storedBoot).Save(sampleCheckpoint(tc.storedBoot)); err != nil {
				t.Fatal(err)
			}
			_, ctx := ktesting.NewTestContext(t)
			l, err := OpenLedger(ctx, NewStore(path, "boot-1"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, l.Claims()); diff != "" {
				t.Errorf("claims (-want +got):\n%s", diff)
			}
			// The file says the same: the boot is "boot-1" now, so a load
			// under "boot-0" would discard it.
			stored, res, err := NewStore(path, "boot-1").Load()
			if err != nil {
				t.Fatal(err)
			}
			if res.DiscardedBootID != "" {
				t.Errorf("the discard was not saved: a reload discards boot %q again", res.DiscardedBootID)
			}
			if diff := cmp.Diff(tc.want, stored.Claims); diff != "" {
				t.Errorf("stored claims (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOpenLedgerOfACorruptFileFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoint.json")
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLedger(context.Background(), NewStore(path, "boot-1")); err == nil {
		t.Fatal("a corrupt checkpoint was opened")
	}
}

func TestLedgerChangesAreStoredBeforeTheyAreSeen(t *testing.T) {
	started := ClaimState{Namespace: "ns", Name: "c", Status: PrepareStarted}
	sample := sampleCheckpoint("boot-1").Claims
	cases := map[string]struct {
		update func(*Ledger) error
		want   map[string]ClaimState
	}{
		"a new claim is added": {
			update: func(l *Ledger) error { return l.SaveClaim("uid-c", started) },
			want:   map[string]ClaimState{"uid-a": sample["uid-a"], "uid-b": sample["uid-b"], "uid-monitor": sample["uid-monitor"], "uid-c": started},
		},
		"a claim is deleted": {
			update: func(l *Ledger) error { return l.DeleteClaim("uid-b") },
			want:   map[string]ClaimState{"uid-a": sample["uid-a"], "uid-monitor": sample["uid-monitor"]},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "checkpoint.json")
			l := openSampleLedger(t, path)
			before := l.Claims()
			if err := tc.update(l); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, l.Claims()); diff != "" {
				t.Errorf("claims (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(sample, before); diff != "" {
				t.Errorf("a map handed out earlier changed (-want +got):\n%s", diff)
			}
			loaded, _, err := NewStore(path, "boot-1").Load()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, loaded.Claims); diff != "" {
				t.Errorf("stored claims (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeletingAnUnknownClaimWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoint.json")
	l, err := OpenLedger(context.Background(), NewStore(path, "boot-1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteClaim("uid-unknown"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("checkpoint file written: %v", err)
	}
}

func TestAFailedSaveKeepsTheRecordedState(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint.json")
	l := openSampleLedger(t, path)
	// The directory becomes a regular file: no save can succeed.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := l.SaveClaim("uid-c", ClaimState{Status: PrepareStarted}); err == nil {
		t.Fatal("save under a regular file succeeded")
	}
	if err := l.DeleteClaim("uid-a"); err == nil {
		t.Fatal("delete under a regular file succeeded")
	}
	if diff := cmp.Diff(sampleCheckpoint("boot-1").Claims, l.Claims()); diff != "" {
		t.Errorf("claims after failed saves (-want +got):\n%s", diff)
	}
}
