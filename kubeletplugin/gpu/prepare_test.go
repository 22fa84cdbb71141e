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
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

func unprepare(t *testing.T, d *Driver, uids ...string) map[types.UID]error {
	t.Helper()
	var objs []kubeletplugin.NamespacedObject
	for _, uid := range uids {
		objs = append(objs, kubeletplugin.NamespacedObject{UID: types.UID(uid)})
	}
	res, err := d.UnprepareResourceClaims(testContext(t), objs)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func loadState(t *testing.T, e *testNodeEnv) checkpoint.Checkpoint {
	t.Helper()
	cp, _, err := checkpoint.NewStore(e.checkpoint, testBootID).Load()
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func specFiles(t *testing.T, e *testNodeEnv) []string {
	t.Helper()
	w, _ := cdi.NewWriter(e.cdiRoot, testDriver)
	uids, err := w.ClaimUIDs()
	if err != nil {
		t.Fatal(err)
	}
	return uids
}

// migInstances counts the MIG devices that exist on a GPU.
func migInstances(t *testing.T, lib nvml.Interface, uuid string) int {
	t.Helper()
	dev, r := lib.DeviceGetHandleByUUID(uuid)
	if r != nvml.SUCCESS {
		t.Fatalf("get %s: %v", uuid, r)
	}
	maxCount, _ := dev.GetMaxMigDeviceCount()
	n := 0
	for i := range maxCount {
		if _, r := dev.GetMigDeviceHandleByIndex(i); r == nvml.SUCCESS {
			n++
		}
	}
	return n
}

func TestPrepareFullGPU(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver()
	claim := utiltesting.MakeResourceClaim("train", "default").UID("uid-a").Device("gpu", testDriver, testNode, "gpu-0").Device("gpu", testDriver, testNode, "gpu-3").Obj()

	ids, err := prepareOne(t, d, claim)
	if err != nil {
		t.Fatal(err)
	}
	view, err := cdi.Resolve(e.cdiRoot, ids...)
	if err != nil {
		t.Fatal(err)
	}
	want := cdi.ContainerView{
		Env: []string{
			"NVIDIA_DRA_DEVICE_GPU_0=" + gpuUUIDOf(t, d, 0),
			"NVIDIA_DRA_DEVICE_GPU_3=" + gpuUUIDOf(t, d, 3),
			"NVIDIA_VISIBLE_DEVICES=void",
		},
		DeviceNodes: []string{"/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia0", "/dev/nvidia3", "/dev/nvidiactl"},
	}
	if diff := cmp.Diff(want, view); diff != "" {
		t.Errorf("container view (-want +got):\n%s", diff)
	}

	again, err := prepareOne(t, d, claim)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ids, again); diff != "" {
		t.Errorf("a repeated prepare returned other devices (-first +repeat):\n%s", diff)
	}
	if got := loadState(t, e).Claims["uid-a"].Status; got != checkpoint.PrepareCompleted {
		t.Errorf("checkpoint status = %q", got)
	}

	other := utiltesting.MakeResourceClaim("steal", "default").UID("uid-b").Device("gpu", testDriver, testNode, "gpu-3").Obj()
	if _, err := prepareOne(t, d, other); err == nil || !strings.Contains(err.Error(), "gpu-3 is already prepared for claim uid-a") {
		t.Errorf("a second claim for gpu-3: error = %v", err)
	}

	if res := unprepare(t, d, "uid-a"); res["uid-a"] != nil {
		t.Fatal(res["uid-a"])
	}
	if res := unprepare(t, d, "uid-a"); res["uid-a"] != nil {
		t.Errorf("repeated unprepare: %v", res["uid-a"])
	}
	if got := specFiles(t, e); len(got) != 0 {
		t.Errorf("CDI specs left after unprepare: %v", got)
	}
	if _, err := prepareOne(t, d, other); err != nil {
		t.Errorf("gpu-3 after unprepare: %v", err)
	}
}

func TestPrepareRejectsBeforeAnySideEffect(t *testing.T) {
	cases := map[string]struct {
		claim   *resourceapi.ResourceClaim
		wantErr string
	}{
		"a device this node does not publish": {
			claim: utiltesting.MakeResourceClaim("c", "default").UID("uid-x").Device("gpu", testDriver, testNode, "gpu-42").Obj(), wantErr: "gpu-42 is not published by this node",
		},
		"a config with an unknown field": {
			claim: utiltesting.MakeResourceClaim("c", "default").UID("uid-x").Device("gpu", testDriver, testNode, "gpu-0").
				Config(resourceapi.AllocationConfigSourceClaim, testDriver, `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharng":{}}`).Obj(),
			wantErr: "sharng",
		},
		"a MIG config on a full GPU": {
			claim:   utiltesting.MakeResourceClaim("c", "default").UID("uid-x").Device("gpu", testDriver, testNode, "gpu-0").Config(resourceapi.AllocationConfigSourceClaim, testDriver, migMPS).Obj(),
			wantErr: "use a GpuConfig",
		},
		"an MPS limit for a device index the claim lacks": {
			claim: utiltesting.MakeResourceClaim("c", "default").UID("uid-x").Device("gpu", testDriver, testNode, "gpu-0").Config(resourceapi.AllocationConfigSourceClaim, testDriver,
				`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultPerDevicePinnedMemoryLimit":{"3":"1Gi"}}}}`).Obj(),
			wantErr: "index out of range",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newTestNodeEnv(t, "hgx-h100-8")
			d := e.mustDriver()
			if _, err := prepareOne(t, d, tc.claim); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
			if n := len(loadState(t, e).Claims); n != 0 {
				t.Errorf("%d claims recorded after a rejected prepare", n)
			}
			if got := specFiles(t, e); len(got) != 0 {
				t.Errorf("CDI specs after a rejected prepare: %v", got)
			}
		})
	}
}

func TestPrepareStaticMIG(t *testing.T) {
	e := newTestNodeEnv(t, "a100-40gb-mig")
	d := e.mustDriver()
	mig := d.Inventory().GPUs[1].MigDevices[0]
	name := migDeviceName(1, mig.Profile, mig.GIProfileID, mig.Placement.Start)
	ids, err := prepareOne(t, d, utiltesting.MakeResourceClaim("c", "default").UID("uid-m").Device("mig", testDriver, testNode, name).Obj())
	if err != nil {
		t.Fatal(err)
	}
	view, err := cdi.Resolve(e.cdiRoot, ids...)
	if err != nil {
		t.Fatal(err)
	}
	wantEnv := "NVIDIA_DRA_DEVICE_" + envName(name) + "=" + mig.UUID
	if !strings.Contains(strings.Join(view.Env, "\n"), wantEnv) {
		t.Errorf("env %v lacks %s", view.Env, wantEnv)
	}
	caps := 0
	for _, n := range view.DeviceNodes {
		if strings.HasPrefix(n, "/dev/nvidia-caps/nvidia-cap") {
			caps++
		}
	}
	if caps != 2 || !strings.Contains(strings.Join(view.DeviceNodes, " "), "/dev/nvidia1") {
		t.Errorf("device nodes %v: want the parent and the GI and CI capabilities", view.DeviceNodes)
	}
}

// fourSmallPartitions is a claim of four 1g.5gb partitions of GPU 2.
func fourSmallPartitions(t *testing.T, d *Driver) *utiltesting.ResourceClaimWrapper {
	t.Helper()
	var names []string
	for _, dev := range allDevices(d.Resources()) {
		p, _ := strAttr(dev, attrParentUUID)
		prof, _ := strAttr(dev, attrProfile)
		if p == gpuUUIDOf(t, d, 2) && prof == "1g.5gb" && len(names) < 4 {
			names = append(names, dev.Name)
		}
	}
	b := utiltesting.MakeResourceClaim("four", "default").UID("uid-4")
	for _, n := range names {
		b.Device("mig", testDriver, testNode, n)
	}
	return b
}

func TestPreparePartitionableMIG(t *testing.T) {
	e := newTestNodeEnv(t, "a100-40gb-mig", withDynamicMIG())
	d := e.mustDriver()
	gpu2 := gpuUUIDOf(t, d, 2)
	claim := fourSmallPartitions(t, d).Obj()

	ids, err := prepareOne(t, d, claim)
	if err != nil {
		t.Fatal(err)
	}
	if n := migInstances(t, e.lib, gpu2); n != 4 {
		t.Errorf("%d MIG instances after prepare, want 4", n)
	}
	view, err := cdi.Resolve(e.cdiRoot, ids...)
	if err != nil {
		t.Fatal(err)
	}
	migEnv := 0
	for _, v := range view.Env {
		if strings.HasPrefix(v, "NVIDIA_DRA_DEVICE_") && strings.Contains(v, "=MIG-") {
			migEnv++
		}
	}
	if migEnv != 4 {
		t.Errorf("env %v: want 4 MIG UUIDs", view.Env)
	}
	if res := unprepare(t, d, string(claim.UID)); res[claim.UID] != nil {
		t.Fatal(res[claim.UID])
	}
	if n := migInstances(t, e.lib, gpu2); n != 0 {
		t.Errorf("%d MIG instances after unprepare, want 0", n)
	}
	// A partition overlapping a prepared one is refused even though the
	// allocator should never hand it out.
	if _, err := prepareOne(t, d, utiltesting.MakeResourceClaim("full", "default").UID("uid-f").Device("gpu", testDriver, testNode, "gpu-2").Obj()); err != nil {
		t.Fatal(err)
	}
	overlap := utiltesting.MakeResourceClaim("o", "default").UID("uid-o").Device("mig", testDriver, testNode, claim.Status.Allocation.Devices.Results[0].Device).Obj()
	if _, err := prepareOne(t, d, overlap); err == nil || !strings.Contains(err.Error(), "overlaps gpu-2") {
		t.Errorf("overlapping partition: error = %v", err)
	}
}

func TestCrashBetweenStartedAndCompleted(t *testing.T) {
	points := []string{"prepare-started", "mig-created-unrecorded", "mig-created", "devices-applied", "cdi-written"}
	for _, point := range points {
		t.Run("crash at "+point, func(t *testing.T) {
			e := newTestNodeEnv(t, "a100-40gb-mig", withDynamicMIG())
			d := e.mustDriver()
			gpu2 := gpuUUIDOf(t, d, 2)
			claim := fourSmallPartitions(t, d).Obj()
			d.state.crash = func(p string) bool { return p == point }
			func() {
				defer func() {
					if r := recover(); r != draplugin.ErrSimulatedCrash { //nolint:errorlint // recover returns the panic value itself, never wrapped
						t.Fatalf("prepare did not reach crash point %s (recovered %v)", point, r)
					}
				}()
				_, _ = d.PrepareResourceClaims(testContext(t), []*resourceapi.ResourceClaim{claim})
			}()
			if got := loadState(t, e).Claims[string(claim.UID)].Status; got != checkpoint.PrepareStarted {
				t.Fatalf("after the crash the claim is %q, want %s", got, checkpoint.PrepareStarted)
			}

			// The plugin restarts on the same node.
			d2 := e.mustDriver()
			if n := migInstances(t, e.lib, gpu2); n > 4 {
				t.Errorf("%d MIG instances after restart, want at most 4", n)
			}
			thief := utiltesting.MakeResourceClaim("t", "default").UID("uid-t").Device("mig", testDriver, testNode, claim.Status.Allocation.Devices.Results[0].Device).Obj()
			if _, err := prepareOne(t, d2, thief); err == nil {
				t.Error("a device of the interrupted claim was prepared for another claim")
			}
			ids, err := prepareOne(t, d2, claim)
			if err != nil {
				t.Fatalf("retried prepare: %v", err)
			}
			if len(ids) != 4 {
				t.Errorf("%d CDI devices, want 4", len(ids))
			}
			if n := migInstances(t, e.lib, gpu2); n != 4 {
				t.Errorf("%d MIG instances after the retry, want exactly 4", n)
			}
			if got := loadState(t, e).Claims[string(claim.UID)].Status; got != checkpoint.PrepareCompleted {
				t.Errorf("after the retry the claim is %q", got)
			}
			if res := unprepare(t, d2, string(claim.UID)); res[claim.UID] != nil {
				t.Fatal(res[claim.UID])
			}
			if n := migInstances(t, e.lib, gpu2); n != 0 {
				t.Errorf("%d MIG instances leaked", n)
			}
		})
	}
}

func TestRebootDiscardsStaleState(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver()
	if _, err := prepareOne(t, d, utiltesting.MakeResourceClaim("c", "default").UID("uid-a").Device("gpu", testDriver, testNode, "gpu-0").Obj()); err != nil {
		t.Fatal(err)
	}
	d2 := e.mustDriver(e.withBootID("boot-2"))
	cp, _, err := checkpoint.NewStore(e.checkpoint, "boot-2").Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.Claims) != 0 {
		t.Errorf("claims of the earlier boot survived: %v", cp.Claims)
	}
	if got := specFiles(t, e); len(got) != 0 {
		t.Errorf("CDI specs of the earlier boot survived: %v", got)
	}
	if _, err := prepareOne(t, d2, utiltesting.MakeResourceClaim("c2", "default").UID("uid-b").Device("gpu", testDriver, testNode, "gpu-0").Obj()); err != nil {
		t.Errorf("gpu-0 after reboot: %v", err)
	}
}

func TestCorruptCheckpointStopsStart(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	if err := os.WriteFile(e.checkpoint, []byte(`{"version":"v2","checksum":"x","data":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := e.newDriver(); err == nil || !errors.Is(err, checkpoint.ErrCorrupt) {
		t.Errorf("start with a corrupt checkpoint: %v, want ErrCorrupt", err)
	}
}

func TestAdminAccessDoesNotOwnTheDevice(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver()
	if _, err := prepareOne(t, d, utiltesting.MakeResourceClaim("owner", "default").UID("uid-owner").Device("gpu", testDriver, testNode, "gpu-6").Obj()); err != nil {
		t.Fatal(err)
	}
	monitor := utiltesting.MakeResourceClaim("monitor", "default").UID("uid-mon").Device("gpu", testDriver, testNode, "gpu-6").AdminAccess().
		Config(resourceapi.AllocationConfigSourceClaim, testDriver, tsShort).Obj()
	if _, err := prepareOne(t, d, monitor); err != nil {
		t.Fatalf("admin access next to the owner: %v", err)
	}
	if got, _ := e.lib.TimeSlice(6); got.String() != "Default" {
		t.Errorf("a monitor changed the owner's time slice to %v", got)
	}
	unprepare(t, d, "uid-owner")
	if _, err := prepareOne(t, d, utiltesting.MakeResourceClaim("next", "default").UID("uid-next").Device("gpu", testDriver, testNode, "gpu-6").Obj()); err != nil {
		t.Errorf("a new owner while the monitor holds the device: %v", err)
	}
}

func TestClaimWithoutDevicesOfThisDriver(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver()
	claim := utiltesting.MakeResourceClaim("other", "default").UID("uid-o").Device("ch", "compute-domain.nvidia.com", testNode, "channel-0").Obj()
	ids, err := prepareOne(t, d, claim)
	if err != nil || len(ids) != 0 {
		t.Errorf("prepare = %v, %v; want nothing and no error", ids, err)
	}
	if n := len(loadState(t, e).Claims); n != 0 {
		t.Errorf("%d claims recorded", n)
	}
}

func TestPartitionableStartDestroysInstancesNobodyOwns(t *testing.T) {
	// Static layouts exist (an administrator's, or a crashed plugin's), and
	// the plugin starts in partitionable mode.
	e := newTestNodeEnv(t, "a100-40gb-mig")
	before := 0
	for i := range 8 {
		dev, _ := e.lib.DeviceGetHandleByIndex(i)
		uuid, _ := dev.GetUUID()
		before += migInstances(t, e.lib, uuid)
	}
	if before == 0 {
		t.Fatal("the profile has no static layout to start from")
	}
	e.partition = true
	d := e.mustDriver()
	for _, g := range d.Inventory().GPUs {
		if n := migInstances(t, e.lib, g.UUID); n != 0 {
			t.Errorf("GPU %d keeps %d MIG instances", g.Minor, n)
		}
		if len(g.MigDevices) != 0 {
			t.Errorf("GPU %d inventory still lists %d MIG devices", g.Minor, len(g.MigDevices))
		}
	}
	if counters := len(d.Resources().Pools[testNode].Slices[0].SharedCounters); counters == 0 {
		t.Error("no shared counters published")
	}
}
