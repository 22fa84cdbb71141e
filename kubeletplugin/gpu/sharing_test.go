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
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
	"github.com/computedomain-operator/computedomain-operator/internal/featuregates"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

func TestSharingThroughNVMLAndCDI(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver()
	ts := utiltesting.MakeResourceClaim("ts", "default").UID("uid-ts").Device("gpu", testDriver, testNode, "gpu-1").Config(resourceapi.AllocationConfigSourceClaim, testDriver, tsLong).Obj()
	if _, err := prepareOne(t, d, ts); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.lib.TimeSlice(1); got.String() != "Long" {
		t.Errorf("time slice after prepare = %v, want Long", got)
	}
	mps := utiltesting.MakeResourceClaim("mps", "default").UID("uid-mps").Device("gpu", testDriver, testNode, "gpu-2").Config(resourceapi.AllocationConfigSourceClass, testDriver,
		`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":50,"defaultPinnedDeviceMemoryLimit":"2Gi"}}}`).Obj()
	ids, err := prepareOne(t, d, mps)
	if err != nil {
		t.Fatal(err)
	}
	dev2, _ := e.lib.DeviceGetHandleByIndex(2)
	if mode, _ := dev2.GetComputeMode(); mode != 3 { // COMPUTEMODE_EXCLUSIVE_PROCESS
		t.Errorf("compute mode after MPS prepare = %v, want exclusive process", mode)
	}
	view := resolveView(t, e, ids)
	wantEnv := []string{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=" + gpuUUIDOf(t, d, 2) + "=2048M"}
	for _, w := range wantEnv {
		if !strings.Contains(strings.Join(view, "\n"), w) {
			t.Errorf("env %v lacks %s", view, w)
		}
	}
	unprepare(t, d, "uid-ts", "uid-mps")
	if got, _ := e.lib.TimeSlice(1); got.String() != "Default" {
		t.Errorf("time slice after unprepare = %v, want Default", got)
	}
	if mode, _ := dev2.GetComputeMode(); mode != 0 {
		t.Errorf("compute mode after unprepare = %v, want default", mode)
	}
}

func resolveView(t *testing.T, e *testNodeEnv, ids []string) []string {
	t.Helper()
	v, err := resolveCDI(e.cdiRoot, ids)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestASharingChangeInterruptedByACrashIsUndone: the plugin is killed right after it put a GPU into
// exclusive-process mode (MPS) or changed its time slice, before any later checkpoint write. After the
// restart, unpreparing the claim (the kubelet's call, or the stale-claim sweep) puts the GPU back to its
// defaults, so the next tenant does not inherit the setting.
func TestASharingChangeInterruptedByACrashIsUndone(t *testing.T) {
	cases := map[string]struct {
		config string
		gpu    int
	}{
		"MPS (exclusive-process compute mode)": {
			config: `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS"}}`, gpu: 2,
		},
		"time-slicing": {config: tsLong, gpu: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newTestNodeEnv(t, "hgx-h100-8")
			d := e.mustDriver()
			claim := utiltesting.MakeResourceClaim("c", "default").UID("uid-c").Device("gpu", testDriver, testNode, fmt.Sprintf("gpu-%d", tc.gpu)).Config(resourceapi.AllocationConfigSourceClaim, testDriver, tc.config).Obj()
			d.state.crash = func(p string) bool { return p == "sharing-applied" }
			func() {
				defer func() {
					if r := recover(); r != draplugin.ErrSimulatedCrash { //nolint:errorlint // recover returns the panic value itself
						t.Fatalf("prepare did not reach the crash point (recovered %v)", r)
					}
				}()
				_, _ = d.PrepareResourceClaims(testContext(t), []*resourceapi.ResourceClaim{claim})
			}()
			dev, _ := e.lib.DeviceGetHandleByIndex(tc.gpu)
			mode, _ := dev.GetComputeMode()
			slice, _ := e.lib.TimeSlice(tc.gpu)
			if mode == 0 && slice.String() == "Default" {
				t.Fatal("the crash point came before the setting changed: nothing to prove")
			}

			d2 := e.mustDriver() // restarted on the same boot
			unprepare(t, d2, "uid-c")
			if mode, _ := dev.GetComputeMode(); mode != 0 {
				t.Errorf("compute mode after the crash and unprepare = %v, want default", mode)
			}
			if got, _ := e.lib.TimeSlice(tc.gpu); got.String() != "Default" {
				t.Errorf("time slice after the crash and unprepare = %v, want Default", got)
			}
		})
	}
}

// TestStartResetsExclusiveProcessModeNoClaimHolds: a GPU left in exclusive-process mode with no recorded claim
// (an earlier boot's checkpoint was discarded, or an operator set it by hand) is back to default when the
// plugin starts; a GPU an MPS claim holds keeps its mode across the restart.
func TestStartResetsExclusiveProcessModeNoClaimHolds(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver()
	mps := utiltesting.MakeResourceClaim("mps", "default").UID("uid-mps").Device("gpu", testDriver, testNode, "gpu-2").Config(resourceapi.AllocationConfigSourceClaim, testDriver,
		`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS"}}`).Obj()
	if _, err := prepareOne(t, d, mps); err != nil {
		t.Fatal(err)
	}
	stray, _ := e.lib.DeviceGetHandleByIndex(5)
	if r := stray.SetComputeMode(3); r != 0 { // COMPUTEMODE_EXCLUSIVE_PROCESS, set behind the plugin's back
		t.Fatalf("set compute mode: %v", r)
	}

	e.mustDriver() // restarted on the same boot
	if mode, _ := stray.GetComputeMode(); mode != 0 {
		t.Errorf("GPU 5, which no claim holds, is still in compute mode %v after the start, want default", mode)
	}
	held, _ := e.lib.DeviceGetHandleByIndex(2)
	if mode, _ := held.GetComputeMode(); mode != 3 {
		t.Errorf("GPU 2, held by an MPS claim, is in compute mode %v after the start, want exclusive process", mode)
	}
}

// TestStartResetsTheTimeSliceNoClaimHolds: a time slice set behind the plugin's back (or by an earlier boot whose
// checkpoint was discarded) on a GPU no claim holds is back to the default after a start; a time-sliced claim
// keeps its GPU's slice.
func TestStartResetsTheTimeSliceNoClaimHolds(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver()
	ts := utiltesting.MakeResourceClaim("ts", "default").UID("uid-ts").Device("gpu", testDriver, testNode, "gpu-1").Config(resourceapi.AllocationConfigSourceClaim, testDriver, tsLong).Obj()
	if _, err := prepareOne(t, d, ts); err != nil {
		t.Fatal(err)
	}
	stray, _ := e.lib.DeviceGetHandleByIndex(4)
	if r := stray.SetTimeSlice(3); r != 0 { // Long, set behind the plugin's back
		t.Fatalf("set time slice: %v", r)
	}

	e.mustDriver() // restarted on the same boot
	if got, _ := e.lib.TimeSlice(4); got.String() != "Default" {
		t.Errorf("GPU 4, which no claim holds, has time slice %v after the start, want Default", got)
	}
	if got, _ := e.lib.TimeSlice(1); got.String() != "Long" {
		t.Errorf("GPU 1, held by a time-sliced claim, has time slice %v after the start, want Long", got)
	}
}

// TestSharingBehindAGateThatIsOffIsRefused: with TimeSlicingSettings or MPSSupport off, a claim asking for that
// sharing fails at prepare naming the gate, and the GPU's settings stay untouched.
func TestSharingBehindAGateThatIsOffIsRefused(t *testing.T) {
	mpsConfig := `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS"}}`
	cases := map[string]struct {
		gates, config, wantErr string
	}{
		"time-slicing with TimeSlicingSettings off": {gates: "TimeSlicingSettings=false", config: tsLong, wantErr: "feature gate TimeSlicingSettings, which is off"},
		"MPS with MPSSupport off":                   {gates: "MPSSupport=false", config: mpsConfig, wantErr: "feature gate MPSSupport, which is off"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newTestNodeEnv(t, "hgx-h100-8")
			gates, err := featuregates.Parse(FeatureGates, tc.gates)
			if err != nil {
				t.Fatal(err)
			}
			d := e.mustDriver(func(c *Config, _ *Deps) { c.Gates = gates })
			claim := utiltesting.MakeResourceClaim("c", "default").UID("uid-c").Device("gpu", testDriver, testNode, "gpu-1").Config(resourceapi.AllocationConfigSourceClaim, testDriver, tc.config).Obj()
			if _, err := prepareOne(t, d, claim); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("prepare error = %v, want one containing %q", err, tc.wantErr)
			}
			dev, _ := e.lib.DeviceGetHandleByIndex(1)
			if mode, _ := dev.GetComputeMode(); mode != 0 {
				t.Errorf("compute mode = %v, want default", mode)
			}
			if got, _ := e.lib.TimeSlice(1); got.String() != "Default" {
				t.Errorf("time slice = %v, want Default", got)
			}
		})
	}
}
