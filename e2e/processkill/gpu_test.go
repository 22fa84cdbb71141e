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

package processkill

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/mps"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
	"github.com/computedomain-operator/computedomain-operator/internal/usage"
	"github.com/computedomain-operator/computedomain-operator/kubeletplugin/gpu"
)

const (
	gpuDriver = "gpu.nvidia.com"
	// gpuStateFile is the mock GPUs' state (host path under the host root): what the GPUs keep while the
	// plugin process is dead.
	gpuStateFile = "/var/lib/nvml-mock/gpus.json"
	mpsConfig    = `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS"}}`
	tsConfig     = `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Long"}}}`
)

// TestGPUPluginSurvivesSIGKILL kills the GPU kubelet plugin process with SIGKILL at random crash points
// and random moments of prepares and unprepares of full GPUs (exclusive, time-sliced, MPS, two in one claim)
// on an HGX node, or of dynamic MIG partitions on an A100 node, driven by the kubelet's DRA manager over
// the plugin's gRPC socket; again while it starts and recovers. The node then holds every claim the script
// left prepared exactly once and nothing else: checkpoint, CDI specs, MIG instances, compute modes (NVML
// has no time-slice getter), MPS control daemons (real stand-in processes) and usage ledger. PROCESS_KILLS
// sets the number of kills (default 200), CRASH_SEED the seed.
func TestGPUPluginSurvivesSIGKILL(t *testing.T) {
	harness(t, &gpuKind{}, 200, 12, []string{"prepare-started", "cdi-written", "mig-created", "mps-daemon-started-unrecorded", "unprepare-cdi-deleted", "timer"})
}

// gpuKind is the GPU plugin on an HGX H100 or an A100 with dynamic MIG, drawn per trial.
type gpuKind struct {
	mig bool
	// passthrough runs the plugin with PassthroughSupport and FabricManagerPartitioning (HGX only).
	passthrough bool
}

func (*gpuKind) binary() string { return "gpu-kubelet-plugin" }
func (*gpuKind) driver() string { return gpuDriver }

func (k *gpuKind) profile() string {
	if k.mig {
		return "a100-40gb-mig"
	}
	return "hgx-h100-8"
}

func (k *gpuKind) args(n *node) []string {
	args := []string{"--node-name=" + n.name, "--kubeconfig=" + cluster.kubeconfig, "--nvml=mock", "--nvml-mock-profile=" + k.profile(),
		"--nvml-mock-fault-file=", "--nvml-mock-state-file=" + gpuStateFile, "--host-root=" + n.hostRoot, "--cdi-root=" + n.cdiRoot,
		"--kubelet-registrar-directory-path=" + n.reg, "--kubelet-plugins-directory-path=" + n.plugins,
		"--mps-control-binary=" + mpsStandin()}
	if k.mig {
		args = append(args, "--nvml-mock-mig=dynamic", "--partitionable-mig")
	}
	if k.passthrough {
		args = append(args, "--feature-gates=PassthroughSupport=true,FabricManagerPartitioning=true")
	}
	return args
}

func (k *gpuKind) prepareNode(_ context.Context, t *testing.T, n *node, rng *rand.Rand) {
	t.Helper()
	k.mig = rng.IntN(2) == 0
	k.fakeHostRoot(t, n)
}

// fakeHostRoot writes the node's host root for the profile, and ends the MPS control daemons the node's
// plugin leaves at the end of the test.
func (k *gpuKind) fakeHostRoot(t *testing.T, n *node) {
	t.Helper()
	t.Cleanup(func() {
		e := mpsExec(n)
		ds, _ := e.Daemons()
		for _, d := range ds {
			_ = e.Stop(context.Background(), d)
		}
	})
	p, err := mock.LoadProfile(k.profile())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hostroot.Fake(n.hostRoot, p.FakeHostRootSpec(n.name)); err != nil {
		t.Fatal(err)
	}
}

func (k *gpuKind) claims(ctx context.Context, t *testing.T, n *node) []*resourceapi.ResourceClaim {
	t.Helper()
	var want []*resourceapi.ResourceClaim
	if k.mig {
		// Three 1g.5gb partitions of GPU 3 (GPU instance profile 19, placements 0-2).
		want = []*resourceapi.ResourceClaim{
			utiltesting.MakeResourceClaim("mig-a", "default").Request("mig", "mig.nvidia.com").Device("mig", gpuDriver, n.name, "gpu-3-mig-1g5gb-19-0").Obj(),
			utiltesting.MakeResourceClaim("mig-b", "default").Request("mig", "mig.nvidia.com").Device("mig", gpuDriver, n.name, "gpu-3-mig-1g5gb-19-1").Device("mig", gpuDriver, n.name, "gpu-3-mig-1g5gb-19-2").Obj(),
		}
	} else {
		want = []*resourceapi.ResourceClaim{
			utiltesting.MakeResourceClaim("excl", "default").Request("gpu", "gpu.nvidia.com").Device("gpu", gpuDriver, n.name, "gpu-0").Obj(),
			utiltesting.MakeResourceClaim("ts", "default").Request("gpu", "gpu.nvidia.com").Device("gpu", gpuDriver, n.name, "gpu-1").Config(resourceapi.AllocationConfigSourceClaim, gpuDriver, tsConfig).Obj(),
			utiltesting.MakeResourceClaim("mps", "default").Request("gpu", "gpu.nvidia.com").Device("gpu", gpuDriver, n.name, "gpu-2").Config(resourceapi.AllocationConfigSourceClass, gpuDriver, mpsConfig).Obj(),
			utiltesting.MakeResourceClaim("pair", "default").Request("gpu", "gpu.nvidia.com").Device("gpu", gpuDriver, n.name, "gpu-3").Device("gpu", gpuDriver, n.name, "gpu-4").Obj(),
		}
	}
	return want
}

// check reads what the node keeps: the checkpoint, the CDI specs, the mock GPUs' state file and the usage
// ledger.
func (k *gpuKind) check(ctx context.Context, t *testing.T, n *node, prepared []*resourceapi.ResourceClaim, trial string) {
	t.Helper()
	want := map[string]*resourceapi.ResourceClaim{}
	for _, c := range prepared {
		want[string(c.UID)] = c
	}
	cp := checkRecordedAndSpecs(t, n, prepared, trial)
	// The GPUs as the next process (and the hardware) sees them.
	gotMIG, modes := k.gpus(t, n)
	wantMIG, sharing := 0, map[string]bool{}
	for _, c := range prepared {
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Request == "mig" {
				wantMIG++
			}
		}
		if c.Name == "ts" {
			sharing[mock.GPUUUID(n.name, 1)] = true
		}
		if c.Name == "mps" {
			sharing[mock.GPUUUID(n.name, 2)] = true
		}
	}
	for uuid, mode := range modes {
		if mode != nvml.COMPUTEMODE_DEFAULT && !sharing[uuid] {
			t.Errorf("%s: GPU %s is left in compute mode %d with no MPS claim on it", trial, uuid, mode)
		}
	}
	if gotMIG != wantMIG {
		t.Errorf("%s: %d MIG devices exist, want %d (one per prepared partition)", trial, gotMIG, wantMIG)
	}
	checkLedger(t, n, cp, want, trial)
	// MPS control daemons: one running for the MPS claim while it is prepared; none otherwise, and no
	// directory of one.
	wantDaemons := []string{}
	for _, c := range prepared {
		if c.Name == "mps" {
			wantDaemons = append(wantDaemons, string(c.UID))
		}
	}
	if got, dirs := runningMPSDaemons(t, n); !slices.Equal(got, wantDaemons) || len(dirs) != len(wantDaemons) {
		t.Errorf("%s: MPS control daemons running %v (directories %v), want %v", trial, got, dirs, wantDaemons)
	}
	// Prepared exactly once: asked again over its socket, the plugin answers from its checkpoint and
	// creates nothing.
	for _, c := range prepared {
		res := prepareOverSocket(ctx, t, n, c)
		if res.GetError() != "" {
			t.Errorf("%s: repeated prepare of %s: %s", trial, c.Name, res.GetError())
		}
	}
	if after, _ := k.gpus(t, n); after != gotMIG {
		t.Errorf("%s: a repeated prepare changed the MIG devices from %d to %d", trial, gotMIG, after)
	}
}

// mpsStandin is the stand-in nvidia-cuda-mps-control the GPU plugin runs.
func mpsStandin() string { return filepath.Join(cluster.bins, "mps-control-standin") }

// mpsExec finds the node's MPS control daemons as the plugin does.
func mpsExec(n *node) mps.Exec {
	return mps.Exec{Binary: mpsStandin(), Root: filepath.Join(n.dataDir(), gpu.MPSDaemonsDir), QuitTimeout: 5 * time.Second}
}

// runningMPSDaemons lists the node's MPS control daemons whose process runs, and all whose directory exists.
func runningMPSDaemons(t *testing.T, n *node) (running, dirs []string) {
	t.Helper()
	ds, err := mpsExec(n).Daemons()
	if err != nil {
		t.Fatal(err)
	}
	running = []string{}
	for id, d := range ds {
		dirs = append(dirs, id)
		if d.PID != 0 {
			running = append(running, id)
		}
	}
	slices.Sort(running)
	return running, dirs
}

// gpus reads the node's GPUs from the mock's state file, as the next plugin process would: the MIG devices
// in all and each GPU's compute mode, by UUID. (NVML has no getter of the time slice.)
func (k *gpuKind) gpus(t *testing.T, n *node) (mig int, modes map[string]nvml.ComputeMode) {
	t.Helper()
	lib, err := mock.New(mock.Config{NodeName: n.name, Profile: k.profile(), MIG: map[bool]mock.MIGMode{true: mock.MIGDynamic, false: mock.MIGStatic}[k.mig],
		StateFile: hostroot.New(n.hostRoot).Path(gpuStateFile)})
	if err != nil {
		t.Fatal(err)
	}
	lib.Init()
	defer lib.Shutdown()
	count, _ := lib.DeviceGetCount()
	modes = map[string]nvml.ComputeMode{}
	for i := range count {
		dev, _ := lib.DeviceGetHandleByIndex(i)
		g, err := nvml.DescribeGPU(lib, i, dev)
		if err != nil {
			t.Fatal(err)
		}
		mig += len(g.MIGDevices)
		modes[g.UUID], _ = dev.GetComputeMode()
	}
	return mig, modes
}

// checkLedger checks the usage ledger: one open interval per prepared claim, from its checkpoint's
// PreparedAt, none for anything else, no two intervals of one claim overlapping.
func checkLedger(t *testing.T, n *node, cp checkpoint.Checkpoint, want map[string]*resourceapi.ResourceClaim, trial string) {
	t.Helper()
	l, err := usage.Open(filepath.Join(n.dataDir(), "usage.jsonl"), usage.Options{Node: n.name})
	if err != nil {
		t.Fatalf("%s: usage ledger: %v", trial, err)
	}
	defer func() { _ = l.Close() }()
	recs, _ := l.After(0, 0)
	type interval struct {
		start, end time.Time
	}
	byClaim := map[string][]*interval{}
	open := map[usage.IntervalKey]*interval{}
	for _, r := range recs {
		k := usage.IntervalKey{ClaimUID: r.ClaimUID, Start: r.Start}
		switch r.Kind {
		case usage.KindStart:
			iv := &interval{start: r.Start}
			open[k] = iv
			byClaim[r.ClaimUID] = append(byClaim[r.ClaimUID], iv)
		case usage.KindEnd:
			if iv := open[k]; iv != nil {
				iv.end = r.Time
			}
		}
	}
	for uid, ivs := range byClaim {
		openCount := 0
		for i, iv := range ivs {
			if iv.end.IsZero() {
				openCount++
				if cs := cp.Claims[uid]; !cs.PreparedAt.Equal(iv.start) {
					t.Errorf("%s: open interval of %s from %s, its checkpoint says prepared at %s", trial, uid, iv.start, cs.PreparedAt)
				}
			}
			for _, other := range ivs[i+1:] {
				if iv.end.IsZero() || other.start.Before(iv.end) {
					t.Errorf("%s: intervals of %s overlap: %+v and %+v", trial, uid, *iv, *other)
				}
			}
		}
		if want[uid] == nil && openCount > 0 {
			t.Errorf("%s: claim %s is not prepared but has %d open usage intervals", trial, uid, openCount)
		}
		if want[uid] != nil && openCount != 1 {
			t.Errorf("%s: claim %s is prepared with %d open usage intervals, want 1", trial, uid, openCount)
		}
	}
	for uid := range want {
		if len(byClaim[uid]) == 0 {
			t.Errorf("%s: claim %s is prepared with no usage interval", trial, uid)
		}
	}
}
