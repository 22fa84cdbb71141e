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
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/mps"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

// fakeMps is the node's MPS control daemons in memory: each has its settings
// and whether its process runs. package mps's tests run the real processes
// (mps.Exec with the stand-in); this fake is for the plugin's logic.
type fakeMps struct {
	mu      sync.Mutex
	root    string
	nextPID int
	daemons map[string]*fakeDaemon
	// starts counts Start calls that started a daemon.
	starts int
}

type fakeDaemon struct {
	settings mps.Settings
	pid      int // 0: the process is gone, the directory stays
}

func newFakeMps() *fakeMps {
	return &fakeMps{root: "/var/lib/kubelet/plugins/gpu.nvidia.com/mps", nextPID: 1000, daemons: map[string]*fakeDaemon{}}
}

func (f *fakeMps) Start(_ context.Context, id string, s mps.Settings) (mps.Daemon, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := mps.ValidID(id); err != nil {
		return mps.Daemon{}, err
	}
	if d, ok := f.daemons[id]; ok && d.pid != 0 {
		return mps.Daemon{}, fmt.Errorf("an MPS control daemon already runs in %s", filepath.Join(f.root, id))
	}
	f.nextPID++
	f.starts++
	s.Env = nil
	f.daemons[id] = &fakeDaemon{settings: s, pid: f.nextPID}
	return mps.Daemon{ID: id, Dir: filepath.Join(f.root, id), PID: f.nextPID}, nil
}

func (f *fakeMps) Stop(_ context.Context, d mps.Daemon) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.daemons, d.ID)
	return nil
}

func (f *fakeMps) Daemons() (map[string]mps.Daemon, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]mps.Daemon{}
	for id, d := range f.daemons {
		out[id] = mps.Daemon{ID: id, Dir: filepath.Join(f.root, id), PID: d.pid}
	}
	return out, nil
}

// kill ends a daemon's process; its directory stays.
func (f *fakeMps) kill(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d, ok := f.daemons[id]; ok {
		d.pid = 0
	}
}

// running maps each daemon whose process runs to its settings.
func (f *fakeMps) running() map[string]mps.Settings {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]mps.Settings{}
	for id, d := range f.daemons {
		if d.pid != 0 {
			out[id] = d.settings
		}
	}
	return out
}

// dirs lists the daemons whose directory exists, running or not.
func (f *fakeMps) dirs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for id := range f.daemons {
		out = append(out, id)
	}
	return out
}

func (f *fakeMps) pid(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d, ok := f.daemons[id]; ok {
		return d.pid
	}
	return 0
}

const mpsLimitsConfig = `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":40,"defaultPinnedDeviceMemoryLimit":"2Gi","defaultPerDevicePinnedMemoryLimit":{"1":"1Gi"},"multiUser":true}}}`

// mpsOneGPUConfig is mpsLimitsConfig without the second device's limit.
const mpsOneGPUConfig = `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":40,"defaultPinnedDeviceMemoryLimit":"2Gi","multiUser":true}}}`

func mpsClaim(uid string, config string, gpus ...int) *resourceapi.ResourceClaim {
	b := utiltesting.MakeResourceClaim("c-"+uid, "default").UID(types.UID(uid))
	for _, g := range gpus {
		b = b.Device("gpu", testDriver, testNode, fmt.Sprintf("gpu-%d", g))
	}
	return b.Config(resourceapi.AllocationConfigSourceClaim, testDriver, config).Obj()
}

// claimSpec reads the claim's CDI spec as the container runtime does.
func claimSpec(t *testing.T, e *testNodeEnv, uid string) cdispec.Spec {
	t.Helper()
	w, err := cdi.NewWriter(e.cdiRoot, testDriver)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(w.SpecPath(uid))
	if err != nil {
		t.Fatal(err)
	}
	var spec cdispec.Spec
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestAnMPSClaimGetsItsOwnControlDaemon: preparing a claim of two MPS-shared GPUs starts one MPS control
// daemon for it before prepare returns, serving both GPUs with the config's thread percentage, each GPU's
// pinned memory limit and multi-user mode; the claim's containers get its pipe, log and shm directories and
// the two variables. A claim without MPS starts none. Unprepare stops the daemon and removes its directories.
func TestAnMPSClaimGetsItsOwnControlDaemon(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver()
	ids, err := prepareOne(t, d, mpsClaim("uid-mps", mpsLimitsConfig, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prepareOne(t, d, mpsClaim("uid-ts", tsLong, 1)); err != nil {
		t.Fatal(err)
	}
	g2, g3 := gpuUUIDOf(t, d, 2), gpuUUIDOf(t, d, 3)
	want := map[string]mps.Settings{"uid-mps": {
		Devices: []string{g2, g3}, ActiveThreadPercentage: ptr.To(40), MultiUser: true,
		PinnedMemoryLimits: map[string]int64{g2: 2048, g3: 1024},
	}}
	if diff := cmp.Diff(want, e.mps.running()); diff != "" {
		t.Errorf("running MPS control daemons (-want +got):\n%s", diff)
	}

	view, err := cdi.Resolve(e.cdiRoot, ids...)
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps", "CUDA_MPS_LOG_DIRECTORY=/var/log/nvidia-mps"} {
		if !strings.Contains(strings.Join(view.Env, "\n"), env) {
			t.Errorf("container env %v lacks %s", view.Env, env)
		}
	}
	dir := filepath.Join(e.mps.root, "uid-mps")
	var mounts []string
	for _, m := range claimSpec(t, e, "uid-mps").ContainerEdits.Mounts {
		if strings.HasPrefix(m.HostPath, e.mps.root) {
			mounts = append(mounts, m.HostPath+":"+m.ContainerPath)
		}
	}
	wantMounts := []string{dir + "/pipe:/tmp/nvidia-mps", dir + "/log:/var/log/nvidia-mps", dir + "/shm:/dev/shm"}
	if diff := cmp.Diff(wantMounts, mounts); diff != "" {
		t.Errorf("the claim's MPS mounts (-want +got):\n%s", diff)
	}

	unprepare(t, d, "uid-mps", "uid-ts")
	if got := e.mps.dirs(); len(got) != 0 {
		t.Errorf("MPS control daemons after unprepare: %v", got)
	}
}

// TestMPSDevicesOfOneClaimMustAgreeOnTheDaemon: one daemon serves a claim, so two MPS devices of it that ask
// for different thread percentages or multi-user modes are refused before anything changes, naming the field.
func TestMPSDevicesOfOneClaimMustAgreeOnTheDaemon(t *testing.T) {
	cases := map[string]struct {
		second, wantErr string
	}{
		"thread percentage": {
			second:  `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":20}}}`,
			wantErr: "devices gpu-2 and gpu-3 ask for different sharing.mpsConfig.defaultActiveThreadPercentage (unset and 20)",
		},
		"multi-user mode": {
			second:  `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"multiUser":true}}}`,
			wantErr: "devices gpu-2 and gpu-3 ask for different sharing.mpsConfig.multiUser (false and true)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newTestNodeEnv(t, "hgx-h100-8")
			d := e.mustDriver()
			claim := utiltesting.MakeResourceClaim("c", "default").UID("uid-c").
				Request("a", "gpu.nvidia.com").Device("a", testDriver, testNode, "gpu-2").
				Request("b", "gpu.nvidia.com").Device("b", testDriver, testNode, "gpu-3").
				Config(resourceapi.AllocationConfigSourceClaim, testDriver, mpsConfig, "a").
				Config(resourceapi.AllocationConfigSourceClaim, testDriver, tc.second, "b").Obj()
			_, err := prepareOne(t, d, claim)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("prepare error = %v, want one containing %q", err, tc.wantErr)
			}
			dev, _ := e.lib.DeviceGetHandleByIndex(2)
			if mode, _ := dev.GetComputeMode(); mode != 0 {
				t.Errorf("compute mode of gpu-2 after the refused prepare = %v, want default (nothing changed)", mode)
			}
			if got := e.mps.dirs(); len(got) != 0 {
				t.Errorf("MPS control daemons after the refused prepare: %v", got)
			}
		})
	}
}

// TestMPSControlDaemonsSurviveCrashesAsRecorded: the plugin is killed at each crash point around the MPS
// control daemon, or its daemon dies, and restarts on the same node (the daemons outlive the plugin's
// process). A daemon the checkpoint does not hold as prepared is stopped at start-up; a recorded daemon that
// runs is adopted; a recorded one that died is started again; the kubelet's retried calls end with one daemon
// per prepared MPS claim and none otherwise.
func TestMPSControlDaemonsSurviveCrashesAsRecorded(t *testing.T) {
	cases := map[string]struct {
		// before runs against the first plugin; it returns whether the claim
		// should still be prepared (so a re-prepare is the kubelet's retry).
		before func(t *testing.T, e *testNodeEnv, d *Driver, claim *resourceapi.ResourceClaim)
		// afterRestart checks the node right after the restart.
		afterRestart func(t *testing.T, e *testNodeEnv)
		// then is the kubelet's next call after the restart.
		then func(t *testing.T, d *Driver, claim *resourceapi.ResourceClaim)
		// wantRunning: the claim's daemon runs at the end.
		wantRunning bool
	}{
		"a crash between starting the daemon and recording it leaves no daemon after the restart": {
			before: func(t *testing.T, _ *testNodeEnv, d *Driver, claim *resourceapi.ResourceClaim) {
				mustCrashAt(t, d, "mps-daemon-started-unrecorded", func() { _, _ = prepareOne(t, d, claim) })
			},
			afterRestart: wantNoDaemons,
			then: func(t *testing.T, d *Driver, claim *resourceapi.ResourceClaim) {
				unprepare(t, d, string(claim.UID)) // the pod went away
			},
		},
		"a crash after recording the daemon of an unfinished prepare: stopped at start-up, the retry starts it again": {
			before: func(t *testing.T, _ *testNodeEnv, d *Driver, claim *resourceapi.ResourceClaim) {
				mustCrashAt(t, d, "mps-daemon-recorded", func() { _, _ = prepareOne(t, d, claim) })
			},
			afterRestart: wantNoDaemons,
			then: func(t *testing.T, d *Driver, claim *resourceapi.ResourceClaim) {
				if _, err := prepareOne(t, d, claim); err != nil {
					t.Fatal(err)
				}
			},
			wantRunning: true,
		},
		"a crash between quitting the daemon and forgetting the claim: the retried unprepare finishes": {
			before: func(t *testing.T, e *testNodeEnv, d *Driver, claim *resourceapi.ResourceClaim) {
				if _, err := prepareOne(t, d, claim); err != nil {
					t.Fatal(err)
				}
				mustCrashAt(t, d, "unprepare-mps-daemon-stopped", func() { unprepare(t, d, string(claim.UID)) })
				wantNoDaemons(t, e)
			},
			// The checkpoint still holds the claim as prepared: the start-up gives it its daemon again, which
			// the retried unprepare stops.
			afterRestart: func(t *testing.T, e *testNodeEnv) {
				if _, ok := e.mps.running()["uid-mps"]; !ok {
					t.Errorf("after the restart: running %v, want the still recorded claim's daemon", e.mps.running())
				}
			},
			then: func(t *testing.T, d *Driver, claim *resourceapi.ResourceClaim) {
				if err := unprepare(t, d, string(claim.UID))[claim.UID]; err != nil {
					t.Fatal(err)
				}
			},
		},
		"a recorded daemon that runs is adopted, not restarted": {
			before: func(t *testing.T, _ *testNodeEnv, d *Driver, claim *resourceapi.ResourceClaim) {
				if _, err := prepareOne(t, d, claim); err != nil {
					t.Fatal(err)
				}
			},
			afterRestart: func(t *testing.T, e *testNodeEnv) {
				if e.mps.starts != 1 || e.mps.pid("uid-mps") != 1001 {
					t.Errorf("after the restart: %d starts, daemon process %d; want the first daemon (1 start, process 1001) adopted", e.mps.starts, e.mps.pid("uid-mps"))
				}
			},
			then: func(t *testing.T, d *Driver, claim *resourceapi.ResourceClaim) {
				if _, err := prepareOne(t, d, claim); err != nil {
					t.Fatal(err)
				}
			},
			wantRunning: true,
		},
		"a recorded daemon that died (with the plugin's container) is started again at the plugin's start-up": {
			before: func(t *testing.T, e *testNodeEnv, d *Driver, claim *resourceapi.ResourceClaim) {
				if _, err := prepareOne(t, d, claim); err != nil {
					t.Fatal(err)
				}
				e.mps.kill("uid-mps")
			},
			afterRestart: func(t *testing.T, e *testNodeEnv) {
				if _, ok := e.mps.running()["uid-mps"]; !ok || e.mps.starts != 2 {
					t.Errorf("after the restart: running %v after %d starts; want the claim's daemon started again (2 starts)", e.mps.running(), e.mps.starts)
				}
			},
			then: func(t *testing.T, d *Driver, claim *resourceapi.ResourceClaim) {
				if _, err := prepareOne(t, d, claim); err != nil {
					t.Fatal(err)
				}
			},
			wantRunning: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newTestNodeEnv(t, "hgx-h100-8")
			claim := mpsClaim("uid-mps", mpsOneGPUConfig, 2)
			tc.before(t, e, e.mustDriver(), claim)
			d := e.mustDriver() // restarted on the same boot
			tc.afterRestart(t, e)
			tc.then(t, d, claim)
			want := map[string]mps.Settings{}
			if tc.wantRunning {
				g := gpuUUIDOf(t, d, 2)
				want["uid-mps"] = mps.Settings{Devices: []string{g}, ActiveThreadPercentage: ptr.To(40), MultiUser: true, PinnedMemoryLimits: map[string]int64{g: 2048}}
			}
			if diff := cmp.Diff(want, e.mps.running()); diff != "" {
				t.Errorf("running MPS control daemons at the end (-want +got):\n%s", diff)
			}
			if got, want := len(e.mps.dirs()), len(want); got != want {
				t.Errorf("%d MPS daemon directories at the end, want %d", got, want)
			}
			if _, recorded := loadState(t, e).Claims["uid-mps"]; recorded != tc.wantRunning {
				t.Errorf("claim recorded at the end: %t, want %t", recorded, tc.wantRunning)
			}
		})
	}
}

// TestARecordedMPSDaemonThatDiedIsStartedAgainOnRePrepare: the daemon of a prepared claim dies while the
// plugin runs; the kubelet's next prepare of the claim (a new pod of it) starts it again with the recorded
// settings, in the same directory the claim's CDI spec mounts.
func TestARecordedMPSDaemonThatDiedIsStartedAgainOnRePrepare(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver()
	claim := mpsClaim("uid-mps", mpsOneGPUConfig, 2)
	if _, err := prepareOne(t, d, claim); err != nil {
		t.Fatal(err)
	}
	want := e.mps.running()
	e.mps.kill("uid-mps")
	if _, err := prepareOne(t, d, claim); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, e.mps.running()); diff != "" || e.mps.starts != 2 {
		t.Errorf("after the re-prepare, %d starts; running daemons (-want +got):\n%s", e.mps.starts, diff)
	}
	if _, err := prepareOne(t, d, claim); err != nil {
		t.Fatal(err)
	}
	if e.mps.starts != 2 {
		t.Errorf("a prepare of a claim whose daemon runs started another (%d starts)", e.mps.starts)
	}
}

func wantNoDaemons(t *testing.T, e *testNodeEnv) {
	t.Helper()
	if got := e.mps.dirs(); len(got) != 0 {
		t.Errorf("MPS control daemons after the restart: %v, want none", got)
	}
}

func mustCrashAt(t *testing.T, d *Driver, point string, call func()) {
	t.Helper()
	if !crashAt(d, point, call) {
		t.Fatalf("the call did not reach crash point %s", point)
	}
}

// TestAnMPSClaimFailsWithoutAControlBinary: a plugin given no way to run the MPS control daemon refuses MPS
// claims at prepare, saying so, and leaves the GPU as it was.
func TestAnMPSClaimFailsWithoutAControlBinary(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver(func(_ *Config, deps *Deps) { deps.MPS = nil })
	_, err := prepareOne(t, d, mpsClaim("uid-mps", mpsConfig, 2))
	if err == nil || !strings.Contains(err.Error(), "runs no MPS control daemon (no --mps-control-binary)") {
		t.Fatalf("prepare error = %v, want the missing MPS control daemon named", err)
	}
	dev, _ := e.lib.DeviceGetHandleByIndex(2)
	if mode, _ := dev.GetComputeMode(); mode != 0 {
		t.Errorf("compute mode after the failed prepare = %v, want default", mode)
	}
}
