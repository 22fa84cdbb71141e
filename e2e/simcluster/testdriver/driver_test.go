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

package testdriver

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

func newTestDriver(t *testing.T) *Driver {
	t.Helper()
	dir := t.TempDir()
	cfg := Config{
		DriverName: "gpu.nvidia.com", NodeName: "node-a",
		PluginDir: filepath.Join(dir, "plugin"), CDIDir: filepath.Join(dir, "cdi"),
		Devices: []Device{{
			API:   resourceapi.Device{Name: "gpu-0"},
			Edits: cdispec.ContainerEdits{Env: []string{"NVIDIA_DRA_DEVICE_GPU_0=GPU-0"}},
		}},
	}
	for _, d := range []string{cfg.PluginDir, cfg.CDIDir} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	d := &Driver{cfg: cfg, devices: map[string]Device{"gpu-0": cfg.Devices[0]}, prepared: map[types.UID][]kubeletplugin.Device{}}
	return d
}

func allocated(uid types.UID, pool, device string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: uid},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
				{Request: "gpu", Driver: "gpu.nvidia.com", Pool: pool, Device: device},
			}},
		}},
	}
}

func TestPrepareThenUnprepareLeavesNothing(t *testing.T) {
	ctx := context.Background()
	d := newTestDriver(t)
	res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{allocated("uid-1", "node-a", "gpu-0")})
	if err != nil {
		t.Fatal(err)
	}
	want := []kubeletplugin.Device{{Requests: []string{"gpu"}, PoolName: "node-a", DeviceName: "gpu-0", CDIDeviceIDs: []string{"k8s.gpu.nvidia.com/claim=uid-1-gpu-0"}}}
	if diff := cmp.Diff(want, res["uid-1"].Devices); diff != "" || res["uid-1"].Err != nil {
		t.Fatalf("prepare result mismatch (-want +got):\n%s err=%v", diff, res["uid-1"].Err)
	}
	if _, err := os.Stat(d.specPath("uid-1")); err != nil {
		t.Fatalf("CDI spec not written: %v", err)
	}

	reloaded := newTestDriver(t)
	reloaded.cfg = d.cfg
	if err := reloaded.loadCheckpoint(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(d.prepared, reloaded.prepared); diff != "" {
		t.Fatalf("checkpoint does not restore the prepared claims (-want +got):\n%s", diff)
	}

	if _, err := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{{UID: "uid-1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.specPath("uid-1")); !os.IsNotExist(err) {
		t.Errorf("CDI spec still present after unprepare: %v", err)
	}
	raw, err := os.ReadFile(d.checkpointPath())
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != "{}" {
		t.Errorf("checkpoint after unprepare = %s, want {}", raw)
	}
}

func TestPrepareRefusesDevicesOfOtherNodes(t *testing.T) {
	d := newTestDriver(t)
	cases := map[string]*resourceapi.ResourceClaim{
		"a device of another node's pool": allocated("uid-2", "node-b", "gpu-0"),
		"an unknown device":               allocated("uid-3", "node-a", "gpu-9"),
		"an unallocated claim":            {ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "uid-4"}},
	}
	for name, claim := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{claim})
			if err != nil {
				t.Fatal(err)
			}
			if res[claim.UID].Err == nil {
				t.Fatalf("prepare of %s succeeded, want an error", name)
			}
		})
	}
}
