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
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func sampleCheckpoint(bootID string) Checkpoint {
	return Checkpoint{
		BootID: bootID,
		Claims: map[string]ClaimState{
			"uid-a": {Namespace: "ns", Name: "a", Status: PrepareCompleted, Devices: []PreparedDevice{
				{Requests: []string{"gpu"}, Pool: "node-1", Device: "gpu-0", CDIDeviceIDs: []string{"k8s.gpu.nvidia.com/claim=uid-a-gpu-0"}},
			}},
			"uid-b": {Namespace: "ns", Name: "b", Status: PrepareStarted, Devices: []PreparedDevice{
				{Pool: "node-1", Device: "gpu-1-mig-1g10gb-19-0", Data: json.RawMessage(`{"gi":3,"ci":0}`)},
			}},
			"uid-monitor": {Namespace: "ns", Name: "monitor", Status: PrepareCompleted, Devices: []PreparedDevice{
				{Pool: "node-1", Device: "gpu-5", AdminAccess: true},
			}},
		},
	}
}

func TestRoundTrip(t *testing.T) {
	cases := map[string]Checkpoint{
		"empty state survives a save and load":                           New("boot-1"),
		"claims in both states with driver data survive a save and load": sampleCheckpoint("boot-1"),
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			store := NewStore(filepath.Join(t.TempDir(), "checkpoint.json"), "boot-1")
			if err := store.Save(want); err != nil {
				t.Fatal(err)
			}
			got, res, err := store.Load()
			if err != nil {
				t.Fatal(err)
			}
			if !res.Found {
				t.Error("Load did not report the file as found")
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func writeEnvelope(t *testing.T, path string, version Version, data string) {
	t.Helper()
	raw, err := json.Marshal(envelope{Version: version, Checksum: checksum([]byte(data)), Data: json.RawMessage(data)})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	v1Payload := `{"preparedClaims":{"uid-old":{"namespace":"ns","name":"old","devices":[{"requests":["gpu"],"pool":"node-1","device":"gpu-3","cdiDeviceIDs":["k8s.gpu.nvidia.com/claim=uid-old-gpu-3"]}]}}}`
	cases := map[string]struct {
		setup       func(t *testing.T, path string)
		want        Checkpoint
		wantResult  LoadResult
		wantErr     string
		wantCorrupt bool
	}{
		"no file yet gives empty state for this boot": {
			setup: func(*testing.T, string) {},
			want:  New("boot-now"),
		},
		"state from this boot is kept": {
			setup: func(t *testing.T, path string) {
				if err := NewStore(path, "boot-now").Save(sampleCheckpoint("boot-now")); err != nil {
					t.Fatal(err)
				}
			},
			want:       sampleCheckpoint("boot-now"),
			wantResult: LoadResult{Found: true},
		},
		"state from an earlier boot is discarded": {
			setup: func(t *testing.T, path string) {
				if err := NewStore(path, "boot-before").Save(sampleCheckpoint("boot-before")); err != nil {
					t.Fatal(err)
				}
			},
			want:       New("boot-now"),
			wantResult: LoadResult{Found: true, DiscardedBootID: "boot-before", DiscardedClaims: 3},
		},
		"a v1 file is converted: claims completed, adopted by this boot": {
			setup: func(t *testing.T, path string) { writeEnvelope(t, path, V1, v1Payload) },
			want: Checkpoint{BootID: "boot-now", Claims: map[string]ClaimState{
				"uid-old": {Namespace: "ns", Name: "old", Status: PrepareCompleted, Devices: []PreparedDevice{
					{Requests: []string{"gpu"}, Pool: "node-1", Device: "gpu-3", CDIDeviceIDs: []string{"k8s.gpu.nvidia.com/claim=uid-old-gpu-3"}},
				}},
			}},
			wantResult: LoadResult{Found: true},
		},
		"a flipped byte fails the checksum": {
			setup: func(t *testing.T, path string) {
				if err := NewStore(path, "boot-now").Save(sampleCheckpoint("boot-now")); err != nil {
					t.Fatal(err)
				}
				raw, _ := os.ReadFile(path)
				raw = []byte(strings.Replace(string(raw), "gpu-0", "gpu-9", 1))
				if err := os.WriteFile(path, raw, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			wantErr:     "checksum",
			wantCorrupt: true,
		},
		"truncated JSON is corrupt": {
			setup: func(t *testing.T, path string) {
				if err := os.WriteFile(path, []byte(`{"version":"v2","chec`), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			wantErr:     "corrupt",
			wantCorrupt: true,
		},
		"an unknown version names the supported ones": {
			setup:   func(t *testing.T, path string) { writeEnvelope(t, path, "v9", `{}`) },
			wantErr: `checkpoint version "v9" is not supported, allowed: v1, v2`,
		},
		"an unknown claim status is rejected": {
			setup: func(t *testing.T, path string) {
				writeEnvelope(t, path, V2, `{"bootID":"boot-now","claims":{"u":{"status":"Half"}}}`)
			},
			wantErr:     `status "Half", allowed: PrepareStarted, PrepareCompleted`,
			wantCorrupt: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "checkpoint.json")
			tc.setup(t, path)
			got, res, err := NewStore(path, "boot-now").Load()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				if errors.Is(err, ErrCorrupt) != tc.wantCorrupt {
					t.Errorf("errors.Is(err, ErrCorrupt) = %v, want %v", !tc.wantCorrupt, tc.wantCorrupt)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantResult, res); diff != "" {
				t.Errorf("load result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSaveLeavesNoTempFilesAndIgnoresCrashedOnes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint.json")
	store := NewStore(path, "boot-1")
	if err := store.Save(sampleCheckpoint("boot-1")); err != nil {
		t.Fatal(err)
	}
	// A crash during a later Save leaves a partial temp file behind; the
	// checkpoint itself must still hold the last complete state.
	if err := os.WriteFile(filepath.Join(dir, ".checkpoint.json.tmp-123"), []byte(`{"version":"v2","da`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, _, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sampleCheckpoint("boot-1"), got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("state after crashed write (-want +got):\n%s", diff)
	}
	next := got.Clone()
	delete(next.Claims, "uid-a")
	if err := store.Save(next); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{".checkpoint.json.tmp-123", "checkpoint.json"}, names); diff != "" {
		t.Errorf("directory after save (-want +got):\n%s", diff)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("checkpoint mode = %v, want 0600", info.Mode().Perm())
	}
}

// withShare adds a claim holding one share of gpu-2.
func withShare(cp Checkpoint) Checkpoint {
	cp.Claims["uid-share"] = ClaimState{Namespace: "ns", Name: "share", Status: PrepareCompleted, Devices: []PreparedDevice{
		{Requests: []string{"gpu"}, Pool: "node-1", Device: "gpu-2", ShareID: "share-1", ConsumedCapacity: map[string]string{"memory": "4Gi"}},
	}}
	return cp
}

func TestDeviceOwner(t *testing.T) {
	cp := withShare(sampleCheckpoint("b"))
	cases := map[string]struct {
		pool, device, except string
		share                bool
		wantUID              string
		wantOK               bool
	}{
		"a share does not own its device against another share": {pool: "node-1", device: "gpu-2", share: true},
		"a share owns its device against a whole claim":         {pool: "node-1", device: "gpu-2", wantUID: "uid-share", wantOK: true},
		"a whole claim owns its device against a share":         {pool: "node-1", device: "gpu-0", share: true, wantUID: "uid-a", wantOK: true},
		"a completed claim owns its device":                     {pool: "node-1", device: "gpu-0", wantUID: "uid-a", wantOK: true},
		"a started claim owns its device too":                   {pool: "node-1", device: "gpu-1-mig-1g10gb-19-0", wantUID: "uid-b", wantOK: true},
		"the asking claim itself is not an owner":               {pool: "node-1", device: "gpu-0", except: "uid-a"},
		"a free device has no owner":                            {pool: "node-1", device: "gpu-7"},
		"the same name in another pool is free":                 {pool: "node-2", device: "gpu-0"},
		"an admin-access claim owns nothing":                    {pool: "node-1", device: "gpu-5"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			uid, ok := cp.DeviceOwner(tc.pool, tc.device, tc.except, tc.share)
			if uid != tc.wantUID || ok != tc.wantOK {
				t.Errorf("DeviceOwner = %q, %v; want %q, %v", uid, ok, tc.wantUID, tc.wantOK)
			}
		})
	}
}

func TestCloneIsDeep(t *testing.T) {
	orig := withShare(sampleCheckpoint("b"))
	c := orig.Clone()
	c.Claims["uid-a"].Devices[0].CDIDeviceIDs[0] = "changed"
	c.Claims["uid-b"].Devices[0].Data[0] = 'X'
	c.Claims["uid-share"].Devices[0].ConsumedCapacity["memory"] = "1Gi"
	if diff := cmp.Diff(withShare(sampleCheckpoint("b")), orig, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("original changed through the clone (-want +got):\n%s", diff)
	}
}

func TestReadBootID(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "boot_id")
	empty := filepath.Join(dir, "empty")
	_ = os.WriteFile(good, []byte("4b6f7a1e-0000-4000-8000-000000000001\n"), 0o600)
	_ = os.WriteFile(empty, []byte("\n"), 0o600)
	if id, err := ReadBootID(good); err != nil || id != "4b6f7a1e-0000-4000-8000-000000000001" {
		t.Errorf("ReadBootID = %q, %v", id, err)
	}
	if _, err := ReadBootID(empty); err == nil {
		t.Error("an empty boot_id file was accepted")
	}
	if _, err := ReadBootID(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing boot_id file was accepted")
	}
}
