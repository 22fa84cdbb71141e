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
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/computedomain-operator/computedomain-operator/internal/draplugin/crashtest"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

// The crash harness kills the plugin (a panic at a crash point, as SIGKILL stops the process there; the
// checkpoint, CDI specs, the mock GPUs, the PCI sysfs and the Fabric Manager survive as the disk and hardware do)
// at a random one of the crash points a random script of prepares and unprepares passes, of GPU, MIG,
// time-sliced, MPS, shared, passthrough (vfio) and Fabric Manager partition claims. It then
// restarts the plugin and answers as the kubelet does (retry, or unprepare a claim whose pod went away),
// finishes the script, and checks the node: every claim the script left prepared is prepared exactly once, no
// device belongs to two claims, no CDI spec, MIG instance or MPS control daemon outlives its claim (the MPS
// claim has exactly one daemon while prepared), a GPU no claim shares has its default compute mode and time slice,
// every GPU is on the nvidia driver without override unless a prepared claim passes it through (then on vfio-pci
// with its /dev/vfio group node), and exactly the partitions of the prepared claims are active. The plugin is built with the hook from its start-up on, so that about
// half the kills are followed by another while it restarts (its start-up reconcile: the usage sync, the removal
// of MIG instances no claim owns) or rolls back what the first kill interrupted. CRASH_TRIALS sets the number of
// crashes (default 200), CRASH_SEED the seed.
func TestCrashHarness(t *testing.T) {
	var crashed, repeated, atStartup int
	crashtest.Harness(t, 200, []string{"prepare-started", "devices-applied", "cdi-written", "sharing-applied", "mig-created-unrecorded", "mig-created",
		"unprepare-sharing-undone", "unprepare-mig-destroyed", "unprepare-cdi-deleted", "usage-pending", "unprepare-usage-ended",
		"mps-daemon-started-unrecorded", "mps-daemon-recorded", "unprepare-mps-daemon-stopped",
		"fm-partition-activated", "vfio-override-set", "vfio-unbound", "vfio-bound",
		"unprepare-vfio-override-cleared", "unprepare-vfio-unbound", "unprepare-vfio-rebound", "unprepare-fm-partition-deactivated"},
		func(rng *rand.Rand, name string) string {
			hook := runCrashTrial(t, rng, name)
			repeated += max(0, len(hook.Points)-1)
			atStartup += len(hook.startup)
			if hook.Point != "" {
				crashed++
			}
			return hook.Point
		})
	t.Logf("kills after the first: %d, of them during a start-up: %d", repeated, atStartup)
	if crashed >= 100 && (repeated == 0 || atStartup == 0) {
		t.Errorf("%d kills after the first and %d during a start-up in %d crashed trials: the harness never kills a recovering plugin", repeated, atStartup, crashed)
	}
}

// trialHook is a trial's crash hook, with the kills that hit while the plugin started.
type trialHook struct {
	*crashtest.Hook
	starting bool
	startup  []string
}

func (h *trialHook) At(point string) bool {
	crashed := h.Hook.At(point)
	if crashed && h.starting {
		h.startup = append(h.startup, point)
	}
	return crashed
}

// gpuNode is the GPU plugin on a harness node, built with the trial's crash hook.
type gpuNode struct {
	t      *testing.T
	e      *testNodeEnv
	d      *Driver
	hook   *trialHook
	claims []*resourceapi.ResourceClaim
}

func (n *gpuNode) Restart() {
	n.hook.starting = true
	defer func() { n.hook.starting = false }()
	n.d = n.e.mustDriver(func(_ *Config, d *Deps) { d.Crash = n.hook.At })
}

func (n *gpuNode) CrashHook() *crashtest.Hook { return n.hook.Hook }

func (n *gpuNode) Call(prepare bool, i int) error {
	if prepare {
		_, err := prepareOne(n.t, n.d, n.claims[i])
		return err
	}
	return unprepare(n.t, n.d, string(n.claims[i].UID))[n.claims[i].UID]
}

// runCrashTrial runs one script with a crash at a random crash-point hit (and maybe more while the plugin
// recovers) and checks the node; it returns the hook, whose Point is "" when the script passed fewer points
// than drawn.
func runCrashTrial(t *testing.T, rng *rand.Rand, trial string) *trialHook {
	t.Helper()
	e, claims := harnessClaims(t, rng)
	hook := &trialHook{Hook: crashtest.NewHook(rng, 24)}
	node := &gpuNode{t: t, e: e, d: e.mustDriver(), hook: hook, claims: claims}
	node.d.state.crash = hook.At
	left := crashtest.Run(t, rng, node, crashtest.Script(rng, len(claims)), trial)
	node.d.state.crash = nil // the checks below are no part of the script
	prepared := map[string]*resourceapi.ResourceClaim{}
	for i := range left {
		prepared[string(claims[i].UID)] = claims[i]
	}
	checkNode(t, e, node.d, prepared, fmt.Sprintf("%s (crashes at %q)", trial, hook.Points))
	for _, c := range prepared {
		if err := unprepare(t, node.d, string(c.UID))[c.UID]; err != nil {
			t.Fatalf("%s: final unprepare of %s: %v", trial, c.Name, err)
		}
	}
	checkNode(t, e, node.d, nil, trial+" after unpreparing everything")
	return hook
}

// harnessClaims are the claims of a trial: full GPUs (exclusive, time-sliced, MPS, two GPUs in one claim) on an
// HGX node, consumable shares of full GPUs (two time-sliced claims sharing one GPU, one claim with two shares of
// another) on an HGX node, or dynamic MIG partitions on an A100 node.
func harnessClaims(t *testing.T, rng *rand.Rand) (*testNodeEnv, []*resourceapi.ResourceClaim) {
	switch rng.IntN(4) {
	case 3:
		// Passthrough and Fabric Manager partitions on an HGX node: two GPUs of partition 3 (modules 1 and 3) for a
		// VM, one GPU of partition 11 (module 5) for a VM, full GPUs of partitions 8 (module 2) and 6 (modules 6, 8).
		e := newTestNodeEnv(t, "hgx-h100-8", withPassthrough(), withFabricManager())
		return e, []*resourceapi.ResourceClaim{
			utiltesting.MakeResourceClaim("vm-pair", "default").UID("uid-vm-pair").
				Device("vm", testDriver, testNode, "gpu-vfio-0").Device("vm", testDriver, testNode, "gpu-vfio-2").
				Config(resourceapi.AllocationConfigSourceClaim, testDriver, vfioAPIConfig).Obj(),
			utiltesting.MakeResourceClaim("vm-one", "default").UID("uid-vm-one").Device("vm", testDriver, testNode, "gpu-vfio-4").Obj(),
			utiltesting.MakeResourceClaim("gpu-one", "default").UID("uid-gpu-one").Device("gpu", testDriver, testNode, "gpu-1").Obj(),
			utiltesting.MakeResourceClaim("gpu-pair", "default").UID("uid-gpu-pair").
				Device("gpu", testDriver, testNode, "gpu-5").Device("gpu", testDriver, testNode, "gpu-7").Obj(),
		}
	case 2:
		// Consumable shares: two time-sliced shares of gpu-5 in two claims, and a claim of two shares of gpu-6.
		e := newTestNodeEnv(t, "hgx-h100-8", withShares(Shares{Mode: SharesMemory}))
		return e, []*resourceapi.ResourceClaim{
			utiltesting.MakeResourceClaim("share-a", "default").UID("uid-share-a").Device("gpu", testDriver, testNode, "gpu-5").Share("s-a", map[string]string{"memory": "30Gi"}).
				Config(resourceapi.AllocationConfigSourceClaim, testDriver, tsLong).Obj(),
			utiltesting.MakeResourceClaim("share-b", "default").UID("uid-share-b").Device("gpu", testDriver, testNode, "gpu-5").Share("s-b", map[string]string{"memory": "10Gi"}).
				Config(resourceapi.AllocationConfigSourceClaim, testDriver, tsLong).Obj(),
			utiltesting.MakeResourceClaim("share-two", "default").UID("uid-share-two").
				Device("a", testDriver, testNode, "gpu-6").Share("s-c", map[string]string{"memory": "1Gi"}).
				Device("b", testDriver, testNode, "gpu-6").Share("s-d", map[string]string{"memory": "1Gi"}).Obj(),
		}
	case 1:
		e := newTestNodeEnv(t, "hgx-h100-8")
		mps := `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS"}}`
		return e, []*resourceapi.ResourceClaim{
			utiltesting.MakeResourceClaim("excl", "default").UID("uid-excl").Device("gpu", testDriver, testNode, "gpu-0").Obj(),
			utiltesting.MakeResourceClaim("ts", "default").UID("uid-ts").Device("gpu", testDriver, testNode, "gpu-1").Config(resourceapi.AllocationConfigSourceClaim, testDriver, tsLong).Obj(),
			utiltesting.MakeResourceClaim("mps", "default").UID("uid-mps").Device("gpu", testDriver, testNode, "gpu-2").Config(resourceapi.AllocationConfigSourceClass, testDriver, mps).Obj(),
			utiltesting.MakeResourceClaim("pair", "default").UID("uid-pair").Device("gpu", testDriver, testNode, "gpu-3").Device("gpu", testDriver, testNode, "gpu-4").Obj(),
		}
	}
	e := newTestNodeEnv(t, "a100-40gb-mig", withDynamicMIG())
	d := e.mustDriver()
	var small []string
	for _, dev := range allDevices(d.Resources()) {
		p, _ := strAttr(dev, attrParentUUID)
		prof, _ := strAttr(dev, attrProfile)
		if p == gpuUUIDOf(t, d, 3) && prof == "1g.5gb" {
			small = append(small, dev.Name)
		}
	}
	if len(small) < 3 {
		t.Fatalf("want 3 small partitions on GPU 3, got %v", small)
	}
	return e, []*resourceapi.ResourceClaim{
		utiltesting.MakeResourceClaim("mig-a", "default").UID("uid-mig-a").Device("mig", testDriver, testNode, small[0]).Obj(),
		utiltesting.MakeResourceClaim("mig-b", "default").UID("uid-mig-b").Device("mig", testDriver, testNode, small[1]).Device("mig", testDriver, testNode, small[2]).Obj(),
	}
}

// checkNode checks the node against the claims that should be prepared.
func checkNode(t *testing.T, e *testNodeEnv, d *Driver, prepared map[string]*resourceapi.ResourceClaim, trial string) {
	t.Helper()
	state := loadState(t, e)
	recordedWant := map[string]bool{}
	for uid := range prepared {
		recordedWant[uid] = true
	}
	crashtest.CheckRecorded(t, state.Claims, recordedWant, trial)
	// Usage: one open interval per prepared claim, from its PreparedAt, and
	// none for anything else; no two intervals of one claim overlap.
	intervals, _ := ledgerIntervals(t, e)
	open := map[string]int{}
	for i, iv := range intervals {
		if iv.End.IsZero() {
			open[iv.Claim]++
			if cs := state.Claims[iv.Claim]; !cs.PreparedAt.Equal(iv.Start) {
				t.Errorf("%s: open interval of %s from %s, its checkpoint says prepared at %s", trial, iv.Claim, iv.Start, cs.PreparedAt)
			}
		}
		for _, other := range intervals[i+1:] {
			if other.Claim == iv.Claim && (iv.End.IsZero() || other.Start.Before(iv.End)) {
				t.Errorf("%s: intervals of %s overlap: %v and %v", trial, iv.Claim, iv, other)
			}
		}
	}
	for uid := range prepared {
		if open[uid] != 1 {
			t.Errorf("%s: claim %s is prepared with %d open usage intervals, want 1", trial, uid, open[uid])
		}
	}
	for uid, n := range open {
		if _, ok := prepared[uid]; !ok {
			t.Errorf("%s: claim %s is not prepared but has %d open usage intervals", trial, uid, n)
		}
	}
	crashtest.CheckSpecs(t, specFiles(t, e), recordedWant, trial)

	// Prepared exactly once: preparing again changes nothing (same CDI devices, no new MIG instance).
	migBefore := totalMigInstances(t, e, d)
	for _, c := range prepared {
		if _, err := prepareOne(t, d, c); err != nil {
			t.Errorf("%s: repeated prepare of %s: %v", trial, c.Name, err)
		}
	}
	if got := totalMigInstances(t, e, d); got != migBefore {
		t.Errorf("%s: a repeated prepare changed the MIG instances from %d to %d", trial, migBefore, got)
	}
	wantMig := 0
	for _, c := range prepared {
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Request == "mig" {
				wantMig++
			}
		}
	}
	if migBefore != wantMig {
		t.Errorf("%s: %d MIG instances, want %d (one per prepared partition)", trial, migBefore, wantMig)
	}
	// Sharing settings: only on the GPUs of prepared sharing claims.
	for _, g := range d.Inventory().GPUs {
		if g.MIGEnabled {
			continue
		}
		dev, _ := e.lib.DeviceGetHandleByUUID(g.UUID)
		mode, _ := dev.GetComputeMode()
		slice, _ := e.lib.TimeSlice(g.Minor)
		wantMode, wantSlice := nvml.COMPUTEMODE_DEFAULT, nvml.TimeSliceDefault
		if _, ok := prepared["uid-mps"]; ok && g.Minor == 2 {
			wantMode = nvml.COMPUTEMODE_EXCLUSIVE_PROCESS
		}
		if _, ok := prepared["uid-ts"]; ok && g.Minor == 1 {
			wantSlice = nvml.TimeSliceLong
		}
		_, shareA := prepared["uid-share-a"]
		_, shareB := prepared["uid-share-b"]
		if (shareA || shareB) && g.Minor == 5 {
			wantSlice = nvml.TimeSliceLong // until the last share of gpu-5 goes
		}
		if mode != wantMode || slice != wantSlice {
			t.Errorf("%s: GPU %d has compute mode %v and time slice %v, want %v and %v", trial, g.Minor, mode, slice, wantMode, wantSlice)
		}
	}
	checkPassthrough(t, e, prepared, trial)
	// MPS control daemons: one, running, for the prepared MPS claim; no other directory.
	wantDaemons := []string{}
	if _, ok := prepared["uid-mps"]; ok {
		wantDaemons = append(wantDaemons, "uid-mps")
	}
	gotDaemons := slices.Sorted(maps.Keys(e.mps.running()))
	if dirs := e.mps.dirs(); !slices.Equal(wantDaemons, gotDaemons) || len(dirs) != len(wantDaemons) {
		t.Errorf("%s: MPS control daemons running %v (directories %v), want %v", trial, gotDaemons, dirs, wantDaemons)
	}
}

func totalMigInstances(t *testing.T, e *testNodeEnv, d *Driver) int {
	t.Helper()
	n := 0
	for _, g := range d.Inventory().GPUs {
		if g.MIGEnabled {
			n += migInstances(t, e.lib, g.UUID)
		}
	}
	return n
}

// harnessVfio and harnessPartitions are the GPUs (indexes) the passthrough trial's claims pass through, and the
// Fabric Manager partitions they hold.
var (
	harnessVfio       = map[string][]int{"uid-vm-pair": {0, 2}, "uid-vm-one": {4}}
	harnessPartitions = map[string]int{"uid-vm-pair": 3, "uid-vm-one": 11, "uid-gpu-one": 8, "uid-gpu-pair": 6}
)

// checkPassthrough checks, on a passthrough node, every GPU's driver, driver_override and /dev/vfio group node, and
// the active Fabric Manager partitions, against the prepared claims.
func checkPassthrough(t *testing.T, e *testNodeEnv, prepared map[string]*resourceapi.ResourceClaim, trial string) {
	t.Helper()
	if !e.fakeRoot {
		return
	}
	passed := map[int]bool{}
	wantActive := []int{}
	for uid := range prepared {
		for _, i := range harnessVfio[uid] {
			passed[i] = true
		}
		if id, ok := harnessPartitions[uid]; ok && e.fm != nil {
			wantActive = append(wantActive, id)
		}
	}
	for i, bus := range hgxBusIDs {
		drv, override := pciState(t, e, bus)
		wantDrv, wantOverride := "nvidia", "(null)"
		if passed[i] {
			wantDrv, wantOverride = "vfio-pci", "vfio-pci"
		}
		group := exists(filepath.Join(e.hostRoot, "dev/vfio", strconv.Itoa(20+i)))
		if drv != wantDrv || override != wantOverride || group != passed[i] {
			t.Errorf("%s: GPU %s on %q (driver_override %q, /dev/vfio group node %v), want %q (%q, %v)", trial, bus, drv, override, group, wantDrv, wantOverride, passed[i])
		}
	}
	if n := nvmlCount(t, e); n != len(hgxBusIDs)-len(passed) {
		t.Errorf("%s: NVML sees %d GPUs, want %d", trial, n, len(hgxBusIDs)-len(passed))
	}
	if e.fm != nil {
		slices.Sort(wantActive)
		if got := activePartitions(t, e); !slices.Equal(got, wantActive) {
			t.Errorf("%s: active Fabric Manager partitions %v, want %v", trial, got, wantActive)
		}
	}
}
