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

package nvml_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
)

func open(t *testing.T, cfg mock.Config) *mock.Lib {
	t.Helper()
	m, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r := m.Init(); r != nvml.SUCCESS {
		t.Fatalf("Init: %v", r)
	}
	return m
}

func TestDiscoverDescribesEveryAttributeConsumersPublish(t *testing.T) {
	one := 1
	cases := map[string]struct {
		cfg  mock.Config
		gpu  int
		want nvml.GPUInfo
	}{
		"an HGX H100 GPU on the second socket": {
			cfg: mock.Config{NodeName: "node-a", Profile: "hgx-h100-8"},
			gpu: 5,
			want: nvml.GPUInfo{
				GPUFacts: nvml.GPUFacts{
					Index: 5, Minor: 5, UUID: mock.GPUUUID("node-a", 5),
					ProductName: "NVIDIA H100 80GB HBM3", Brand: "NVIDIA", Architecture: "Hopper",
					CUDAComputeCapability: "9.0", PCIBusID: "0000:c3:00.0", NUMANode: &one,
					MemoryBytes: 81559 << 20, AddressingMode: "HMM",
				},
				// NVSwitch inside the node: registered, but no cluster, so no clique.
				Fabric: nvml.FabricInfo{Supported: true, State: nvml.GPU_FABRIC_STATE_COMPLETED},
			},
		},
		"a GB200 GPU in rack 2": {
			cfg: mock.Config{NodeName: "node-b", Profile: "gb200-nvl72", Cluster: "east", Rack: 2},
			gpu: 3,
			want: nvml.GPUInfo{
				GPUFacts: nvml.GPUFacts{
					Index: 3, Minor: 3, UUID: mock.GPUUUID("node-b", 3),
					ProductName: "NVIDIA GB200", Brand: "NVIDIA", Architecture: "Blackwell",
					CUDAComputeCapability: "10.0", PCIBusID: "0019:01:00.0", NUMANode: &one,
					MemoryBytes: 189471 << 20, AddressingMode: "ATS",
				},
				Fabric: nvml.FabricInfo{Supported: true, ClusterUUID: mock.RackClusterUUID("east", 2), CliqueID: 32766, State: nvml.GPU_FABRIC_STATE_COMPLETED},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			info, err := nvml.Discover(context.Background(), open(t, tc.cfg))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, info.GPUs[tc.gpu]); diff != "" {
				t.Errorf("GPU (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDiscoverCanLeaveLostGPUsOut(t *testing.T) {
	m := open(t, mock.Config{NodeName: "node-a", Profile: "hgx-h100-8"})
	for _, i := range []int{2, 5} {
		if err := m.SetGPULost(i, true); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := nvml.Discover(context.Background(), m); !errors.Is(err, nvml.ErrGPULost) {
		t.Errorf("Discover = %v, want ErrGPULost", err)
	}
	info, err := nvml.DiscoverWithOptions(context.Background(), m, nvml.DiscoverOptions{SkipLostGPUs: true})
	if err != nil {
		t.Fatal(err)
	}
	var indices []int
	for _, g := range info.GPUs {
		indices = append(indices, g.Index)
	}
	if diff := cmp.Diff([]int{0, 1, 3, 4, 6, 7}, indices); diff != "" {
		t.Errorf("discovered GPUs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{2, 5}, info.LostGPUs); diff != "" {
		t.Errorf("lost GPUs (-want +got):\n%s", diff)
	}
}

func TestDiscoverListsMIGProfilesWithPlacements(t *testing.T) {
	info, err := nvml.Discover(context.Background(), open(t, mock.Config{NodeName: "node-a", Profile: "a100-40gb-mig", MIG: mock.MIGDynamic}))
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Name       string
		ID         uint32
		Placements []nvml.GpuInstancePlacement
	}
	var got []row
	for _, p := range info.GPUs[0].MIGProfiles {
		got = append(got, row{p.Name, p.Info.Id, p.Placements})
	}
	pl := func(size uint32, starts ...uint32) []nvml.GpuInstancePlacement {
		var out []nvml.GpuInstancePlacement
		for _, s := range starts {
			out = append(out, nvml.GpuInstancePlacement{Start: s, Size: size})
		}
		return out
	}
	want := []row{
		{"1g.5gb", 19, pl(1, 0, 1, 2, 3, 4, 5, 6)},
		{"1g.5gb+me", 20, pl(1, 0, 1, 2, 3, 4, 5, 6)},
		{"1g.10gb", 15, pl(2, 0, 2, 4, 6)},
		{"2g.10gb", 14, pl(2, 0, 2, 4)},
		{"3g.20gb", 9, pl(4, 0, 4)},
		{"4g.20gb", 5, pl(4, 0)},
		{"7g.40gb", 0, pl(8, 0)},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("MIG profiles (-want +got):\n%s", diff)
	}
}
