package checkpoint

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClaimUpdatesAreStoredBeforeTheyAreReturned(t *testing.T) {
	started := ClaimState{Namespace: "ns", Name: "c", Status: PrepareStarted}
	cases := map[string]struct {
		update func(*Store, Checkpoint) (Checkpoint, error)
		want   map[string]ClaimState
	}{
		"a new claim is added": {
			update: func(s *Store, cur Checkpoint) (Checkpoint, error) { return s.SaveClaim(cur, "uid-c", started) },
			want:   map[string]ClaimState{"uid-a": sampleCheckpoint("boot-1").Claims["uid-a"], "uid-b": sampleCheckpoint("boot-1").Claims["uid-b"], "uid-monitor": sampleCheckpoint("boot-1").Claims["uid-monitor"], "uid-c": started},
		},
		"a claim is deleted": {
			update: func(s *Store, cur Checkpoint) (Checkpoint, error) { return s.DeleteClaim(cur, "uid-b") },
			want:   map[string]ClaimState{"uid-a": sampleCheckpoint("boot-1").Claims["uid-a"], "uid-monitor": sampleCheckpoint("boot-1").Claims["uid-monitor"]},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			store := NewStore(filepath.Join(t.TempDir(), "checkpoint.json"), "boot-1")
			cur := sampleCheckpoint("boot-1")
			next, err := tc.update(store, cur)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, next.Claims); diff != "" {
				t.Errorf("returned claims (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(sampleCheckpoint("boot-1"), cur); diff != "" {
				t.Errorf("the current checkpoint changed (-want +got):\n%s", diff)
			}
			loaded, _, err := store.Load()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, loaded.Claims); diff != "" {
				t.Errorf("stored claims (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeleteClaimOfAnUnknownClaimWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoint.json")
	store := NewStore(path, "boot-1")
	cur := sampleCheckpoint("boot-1")
	next, err := store.DeleteClaim(cur, "uid-unknown")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cur, next); diff != "" {
		t.Errorf("checkpoint changed (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("checkpoint file written: %v", err)
	}
}

func TestSaveClaimThatFailsKeepsTheCurrentState(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	store := NewStore(filepath.Join(blocker, "checkpoint.json"), "boot-1") // a directory that cannot exist
	cur := sampleCheckpoint("boot-1")
	next, err := store.SaveClaim(cur, "uid-c", ClaimState{Status: PrepareStarted})
	if err == nil {
		t.Fatal("save under a regular file succeeded")
	}
	if diff := cmp.Diff(cur, next); diff != "" {
		t.Errorf("returned checkpoint (-want +got):\n%s", diff)
	}
}
