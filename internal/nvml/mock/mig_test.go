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
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

type migRow struct {
	Profile    string
	GIProfile  uint32
	GI, CI     uint32
	Start      uint32
	SMs        uint32
	CEs        uint32
	Decoders   uint32
	JPEG, OFA  uint32
	MemoryMiB  uint64
	ParentIdx  int
	HasMIGUUID bool
}

func migRows(g nvml.GPUInfo) []migRow {
	var out []migRow
	for _, m := range g.MIGDevices {
		a := m.Attributes
		out = append(out, migRow{m.Profile, m.GIProfileID, m.GIID, m.CIID, m.Placement.Start, a.MultiprocessorCount,
			a.SharedCopyEngineCount, a.SharedDecoderCount, a.SharedJpegCount, a.SharedOfaCount, a.MemorySizeMB, m.ParentIndex, m.UUID != ""})
	}
	return out
}

func TestStaticLayoutsReportTheMIGHierarchy(t *testing.T) {
	cases := map[string]struct {
		profile string
		gpu     int
		want    []migRow
	}{
		"an A100 40GB mixes 2g, two 1g and 3g with tree-numbered GPU instances": {
			profile: "a100-40gb-mig", gpu: 0,
			want: []migRow{
				{"3g.20gb", 9, 2, 0, 4, 42, 3, 2, 0, 0, 19968, 0, true},
				{"2g.10gb", 14, 3, 0, 0, 28, 2, 1, 0, 0, 9856, 0, true},
				{"1g.5gb", 19, 9, 0, 2, 14, 1, 0, 0, 0, 4864, 0, true},
				{"1g.5gb", 19, 10, 0, 3, 14, 1, 0, 0, 0, 4864, 0, true},
			},
		},
		"an A100 40GB with media extensions on its 1g instance": {
			profile: "a100-40gb-mig", gpu: 5,
			want: []migRow{
				{"3g.20gb", 9, 2, 0, 4, 42, 3, 2, 0, 0, 19968, 5, true},
				{"2g.10gb", 14, 4, 0, 2, 28, 2, 1, 0, 0, 9856, 5, true},
				{"1g.5gb+me", 20, 7, 0, 0, 14, 1, 1, 1, 1, 4864, 5, true},
			},
		},
		"an H100 80GB as one 7g.80gb": {
			profile: "h100-80gb-mig", gpu: 3,
			want: []migRow{{"7g.80gb", 0, 0, 0, 0, 132, 8, 7, 7, 1, 81152, 3, true}},
		},
		"an A100 80GB with 4g, 2g and 1g": {
			profile: "a100-80gb-mig", gpu: 1,
			want: []migRow{
				{"4g.40gb", 5, 1, 0, 0, 56, 4, 2, 0, 0, 40192, 1, true},
				{"2g.20gb", 14, 5, 0, 4, 28, 2, 1, 0, 0, 19968, 1, true},
				{"1g.10gb", 19, 13, 0, 6, 14, 1, 0, 0, 0, 9728, 1, true},
			},
		},
		"an empty MIG-enabled GPU has no MIG devices": {
			profile: "h100-80gb-mig", gpu: 6,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			info := discover(t, newNode(t, Config{NodeName: "node-a", Profile: tc.profile}))
			if diff := cmp.Diff(tc.want, migRows(info.GPUs[tc.gpu])); diff != "" {
				t.Errorf("MIG devices (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMIGDeviceHandlesPointToTheirParent(t *testing.T) {
	m := newNode(t, Config{NodeName: "node-a", Profile: "a100-40gb-mig"})
	parent, r := m.DeviceGetHandleByIndex(0)
	if r != nvml.SUCCESS {
		t.Fatalf("DeviceGetHandleByIndex: %v", r)
	}
	parentUUID, _ := parent.GetUUID()
	mig, r := parent.GetMigDeviceHandleByIndex(0)
	if r != nvml.SUCCESS {
		t.Fatalf("GetMigDeviceHandleByIndex: %v", r)
	}
	isMig, _ := mig.IsMigDeviceHandle()
	back, r := mig.GetDeviceHandleFromMigDeviceHandle()
	if r != nvml.SUCCESS || !isMig {
		t.Fatalf("MIG handle: isMig %v, parent lookup %v", isMig, r)
	}
	gotParent, _ := back.GetUUID()
	name, _ := mig.GetName()
	migUUID, _ := mig.GetUUID()
	byUUID, r := m.DeviceGetHandleByUUID(migUUID)
	if r != nvml.SUCCESS {
		t.Fatalf("DeviceGetHandleByUUID(%s): %v", migUUID, r)
	}
	sameGI, _ := byUUID.GetGpuInstanceId()
	got := []any{gotParent, name, sameGI}
	want := []any{parentUUID, "NVIDIA A100-SXM4-40GB MIG 3g.20gb", 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, r := parent.GetMigDeviceHandleByIndex(4); r != nvml.ERROR_NOT_FOUND {
		t.Errorf("GetMigDeviceHandleByIndex(4) on a GPU with 4 MIG devices = %v, want ERROR_NOT_FOUND", r)
	}
}

// migStep is one create or destroy call in a partitioning story.
type migStep struct {
	create  string // profile name to create at start, or "" to destroy
	start   uint32
	destroy int // index into created GPU instances when create == ""
	want    nvml.Return
}

func TestDynamicMIGEnforcesPlacements(t *testing.T) {
	cases := map[string]struct {
		steps []migStep
		// remaining is GetGpuInstanceRemainingCapacity per profile at the end.
		remaining map[string]int
	}{
		"a 3g and a 4g fill the GPU, nothing else fits": {
			steps: []migStep{
				{create: "4g.20gb", start: 0, want: nvml.SUCCESS},
				{create: "3g.20gb", start: 4, want: nvml.SUCCESS},
				{create: "1g.5gb", start: 6, want: nvml.ERROR_INSUFFICIENT_RESOURCES},
			},
			remaining: map[string]int{"1g.5gb": 0, "3g.20gb": 0, "7g.40gb": 0},
		},
		"a 3g cannot start at slice 2, which is not one of its placements": {
			steps:     []migStep{{create: "3g.20gb", start: 2, want: nvml.ERROR_INVALID_ARGUMENT}},
			remaining: map[string]int{"3g.20gb": 2, "7g.40gb": 1},
		},
		"a 2g overlapping a 1g is refused": {
			steps: []migStep{
				{create: "1g.5gb", start: 1, want: nvml.SUCCESS},
				{create: "2g.10gb", start: 0, want: nvml.ERROR_INSUFFICIENT_RESOURCES},
				{create: "2g.10gb", start: 2, want: nvml.SUCCESS},
			},
			remaining: map[string]int{"1g.5gb": 4, "2g.10gb": 1, "3g.20gb": 1, "7g.40gb": 0},
		},
		"only one 1g.5gb+me exists at a time": {
			steps: []migStep{
				{create: "1g.5gb+me", start: 0, want: nvml.SUCCESS},
				{create: "1g.5gb+me", start: 1, want: nvml.ERROR_INSUFFICIENT_RESOURCES},
			},
			remaining: map[string]int{"1g.5gb+me": 0, "1g.5gb": 6},
		},
		"destroying an instance frees its slices": {
			steps: []migStep{
				{create: "7g.40gb", start: 0, want: nvml.SUCCESS},
				{create: "1g.5gb", start: 0, want: nvml.ERROR_INSUFFICIENT_RESOURCES},
				{destroy: 0, want: nvml.SUCCESS},
				{create: "1g.5gb", start: 0, want: nvml.SUCCESS},
			},
			remaining: map[string]int{"1g.5gb": 6, "7g.40gb": 0},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := newNode(t, Config{NodeName: "node-a", Profile: "a100-40gb-mig", MIG: MIGDynamic})
			dev, _ := m.DeviceGetHandleByIndex(0)
			profiles := profileInfos(t, dev)
			var created []nvml.GpuInstance
			for i, s := range tc.steps {
				if s.create == "" {
					gi := created[s.destroy]
					cis, _ := gi.GetComputeInstances(ciFull(t, gi))
					for _, ci := range cis {
						if r := ci.Destroy(); r != nvml.SUCCESS {
							t.Fatalf("step %d: destroy CI: %v", i, r)
						}
					}
					if r := gi.Destroy(); r != s.want {
						t.Fatalf("step %d: destroy GI = %v, want %v", i, r, s.want)
					}
					continue
				}
				info := profiles[s.create]
				gi, r := dev.CreateGpuInstanceWithPlacement(&info, &nvml.GpuInstancePlacement{Start: s.start, Size: placementSize(t, dev, info)})
				if r != s.want {
					t.Fatalf("step %d: create %s at %d = %v, want %v", i, s.create, s.start, r, s.want)
				}
				if r == nvml.SUCCESS {
					if _, r := gi.CreateComputeInstance(ciFull(t, gi)); r != nvml.SUCCESS {
						t.Fatalf("step %d: create CI: %v", i, r)
					}
					created = append(created, gi)
				}
			}
			got := map[string]int{}
			for p := range tc.remaining {
				info := profiles[p]
				got[p], _ = dev.GetGpuInstanceRemainingCapacity(&info)
			}
			if diff := cmp.Diff(tc.remaining, got); diff != "" {
				t.Errorf("remaining capacity (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAGPUInstanceWithComputeInstancesIsInUse(t *testing.T) {
	m := newNode(t, Config{NodeName: "node-a", Profile: "h100-80gb-mig"})
	dev, _ := m.DeviceGetHandleByIndex(3)
	gi, r := dev.GetGpuInstanceById(0)
	if r != nvml.SUCCESS {
		t.Fatalf("GetGpuInstanceById(0): %v", r)
	}
	if r := gi.Destroy(); r != nvml.ERROR_IN_USE {
		t.Errorf("Destroy of a GPU instance with a compute instance = %v, want ERROR_IN_USE", r)
	}
}

func profileInfos(t *testing.T, dev nvml.Device) map[string]nvml.GpuInstanceProfileInfo {
	t.Helper()
	out := map[string]nvml.GpuInstanceProfileInfo{}
	mem, _ := dev.GetMemoryInfo()
	for p := 0; p < nvml.GPU_INSTANCE_PROFILE_COUNT; p++ {
		info, r := dev.GetGpuInstanceProfileInfo(p)
		if r != nvml.SUCCESS {
			continue
		}
		out[nvml.MigProfileName(p, info.SliceCount, info.SliceCount, mem.Total, info.MemorySizeMB)] = info
	}
	return out
}

func placementSize(t *testing.T, dev nvml.Device, info nvml.GpuInstanceProfileInfo) uint32 {
	t.Helper()
	pl, r := dev.GetGpuInstancePossiblePlacements(&info)
	if r != nvml.SUCCESS || len(pl) == 0 {
		t.Fatalf("placements of profile %d: %v", info.Id, r)
	}
	return pl[0].Size
}

func ciFull(t *testing.T, gi nvml.GpuInstance) *nvml.ComputeInstanceProfileInfo {
	t.Helper()
	giInfo, _ := gi.GetInfo()
	_ = giInfo
	for _, p := range []int{nvml.COMPUTE_INSTANCE_PROFILE_7_SLICE, nvml.COMPUTE_INSTANCE_PROFILE_4_SLICE, nvml.COMPUTE_INSTANCE_PROFILE_3_SLICE, nvml.COMPUTE_INSTANCE_PROFILE_2_SLICE, nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE} {
		if info, r := gi.GetComputeInstanceProfileInfo(p, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED); r == nvml.SUCCESS {
			return &info
		}
	}
	t.Fatalf("GPU instance has no compute instance profile")
	return nil
}
