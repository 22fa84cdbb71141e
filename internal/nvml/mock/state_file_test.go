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

package mock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// TestTheStateFileKeepsWhatTheGPUKeepsAcrossProcesses: a second Lib on the same state file (a plugin started
// again after SIGKILL) finds the MIG instances, compute mode and time slice the first one left, and a
// destroyed instance stays destroyed.
func TestTheStateFileKeepsWhatTheGPUKeepsAcrossProcesses(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state", "gpus.json")
	cfg := Config{NodeName: "node-a", Profile: "a100-40gb-mig", MIG: MIGDynamic, StateFile: state}
	first := newNode(t, cfg)
	dev0, _ := first.DeviceGetHandleByIndex(0)
	profiles := profileInfos(t, dev0)
	small := profiles["1g.5gb"]
	var gis []nvml.GpuInstance
	for _, start := range []uint32{0, 1} {
		gi, r := dev0.CreateGpuInstanceWithPlacement(&small, &nvml.GpuInstancePlacement{Start: start, Size: small.SliceCount})
		if r != nvml.SUCCESS {
			t.Fatalf("create GI at %d: %v", start, r)
		}
		if _, r := gi.CreateComputeInstance(ciFull(t, gi)); r != nvml.SUCCESS {
			t.Fatalf("create CI: %v", r)
		}
		gis = append(gis, gi)
	}
	cis, _ := gis[1].GetComputeInstances(ciFull(t, gis[1]))
	if r := cis[0].Destroy(); r != nvml.SUCCESS {
		t.Fatal(r)
	}
	if r := gis[1].Destroy(); r != nvml.SUCCESS {
		t.Fatal(r)
	}
	dev1, _ := first.DeviceGetHandleByIndex(1)
	if r := dev1.SetComputeMode(nvml.COMPUTEMODE_EXCLUSIVE_PROCESS); r != nvml.SUCCESS {
		t.Fatal(r)
	}
	if r := dev1.SetTimeSlice(nvml.TimeSliceLong); r != nvml.SUCCESS {
		t.Fatal(r)
	}
	before := describeAll(t, first)

	second := newNode(t, cfg)
	if diff := cmp.Diff(before, describeAll(t, second)); diff != "" {
		t.Errorf("the GPUs seen by a new process differ (-first +second):\n%s", diff)
	}
	d1, _ := second.DeviceGetHandleByIndex(1)
	if mode, _ := d1.GetComputeMode(); mode != nvml.COMPUTEMODE_EXCLUSIVE_PROCESS {
		t.Errorf("compute mode %v after a restart, want exclusive-process", mode)
	}
	if got := second.gpus[1].timeSlice; got != nvml.TimeSliceLong {
		t.Errorf("time slice %v after a restart, want %v", got, nvml.TimeSliceLong)
	}
	// The restored placement is enforced: slice 0 is taken, slice 1 is free again.
	d0, _ := second.DeviceGetHandleByIndex(0)
	if _, r := d0.CreateGpuInstanceWithPlacement(&small, &nvml.GpuInstancePlacement{Start: 0, Size: small.SliceCount}); r != nvml.ERROR_INSUFFICIENT_RESOURCES {
		t.Errorf("a GPU instance over the restored one: %v, want ERROR_INSUFFICIENT_RESOURCES", r)
	}
	if _, r := d0.CreateGpuInstanceWithPlacement(&small, &nvml.GpuInstancePlacement{Start: 1, Size: small.SliceCount}); r != nvml.SUCCESS {
		t.Errorf("a GPU instance where the destroyed one was: %v", r)
	}
}

// TestAStateFileOfAnotherNodeIsRefusedNamingTheField: a state file that does not fit this node fails New with
// the file and the field; nothing is overwritten.
func TestAStateFileOfAnotherNodeIsRefusedNamingTheField(t *testing.T) {
	state := filepath.Join(t.TempDir(), "gpus.json")
	newNode(t, Config{NodeName: "node-a", Profile: "a100-40gb-mig", StateFile: state})
	data, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		cfg  Config
		file string
		want string
	}{
		"another node":    {cfg: Config{NodeName: "node-b", Profile: "a100-40gb-mig"}, file: string(data), want: `node "node-a": this is node "node-b"`},
		"another profile": {cfg: Config{NodeName: "node-a", Profile: "hgx-h100-8"}, file: string(data), want: "gpus[0].gpuInstances: the profile's GPUs have no MIG"},
		"not JSON":        {cfg: Config{NodeName: "node-a", Profile: "a100-40gb-mig"}, file: "{", want: "unexpected end of JSON input"},
		"a future format": {cfg: Config{NodeName: "node-a", Profile: "a100-40gb-mig"}, file: `{"version":2,"node":"node-a"}`, want: "version 2: want 1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "gpus.json")
			if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			tc.cfg.StateFile = path
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error naming %s and %q", err, path, tc.want)
			}
			if after, _ := os.ReadFile(path); string(after) != tc.file {
				t.Errorf("the refused state file was rewritten")
			}
		})
	}
}

func describeAll(t *testing.T, m *Lib) []nvml.GPUInfo {
	t.Helper()
	n, _ := m.DeviceGetCount()
	var out []nvml.GPUInfo
	for i := range n {
		dev, _ := m.DeviceGetHandleByIndex(i)
		g, err := nvml.DescribeGPU(m, i, dev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, *g)
	}
	return out
}
