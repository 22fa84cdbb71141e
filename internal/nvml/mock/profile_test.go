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
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// newNode builds and initializes a mock node, failing the test on error.
func newNode(t *testing.T, cfg Config) *Lib {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	if r := m.Init(); r != nvml.SUCCESS {
		t.Fatalf("Init() = %v", r)
	}
	t.Cleanup(func() { m.Shutdown() })
	return m
}

func discover(t *testing.T, m *Lib) *nvml.NodeInfo {
	t.Helper()
	info, err := nvml.Discover(context.Background(), m)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	return info
}

// gpuSummary is what every GPU of a profile shares.
type gpuSummary struct {
	ProductName, Brand, Architecture, CC, AddressingMode string
	MemoryGiB                                            uint64
	MIGEnabled                                           bool
}

func TestEveryProfileDescribesItsNode(t *testing.T) {
	cases := map[string]struct {
		gpus       int
		summary    gpuSummary
		migDevices []int // per GPU index
		fabric     bool
		clique     bool
		migNames   []string
	}{
		"gb200-nvl72": {
			gpus:    4,
			summary: gpuSummary{"NVIDIA GB200", "NVIDIA", "Blackwell", "10.0", "ATS", 185, false},
			fabric:  true,
			clique:  true,
		},
		"gb300-nvl72": {
			gpus:    4,
			summary: gpuSummary{"NVIDIA GB300", "NVIDIA", "Blackwell", "10.3", "ATS", 277, false},
			fabric:  true,
			clique:  true,
		},
		"hgx-h100-8": {
			gpus:    8,
			summary: gpuSummary{"NVIDIA H100 80GB HBM3", "NVIDIA", "Hopper", "9.0", "HMM", 79, false},
			fabric:  true,
		},
		"hgx-h200-8": {
			gpus:    8,
			summary: gpuSummary{"NVIDIA H200", "NVIDIA", "Hopper", "9.0", "HMM", 140, false},
			fabric:  true,
		},
		"a100-40gb-mig": {
			gpus:       8,
			summary:    gpuSummary{"NVIDIA A100-SXM4-40GB", "NVIDIA", "Ampere", "8.0", "HMM", 40, true},
			migDevices: []int{4, 3, 7, 1, 3, 3, 0, 2},
			migNames:   []string{"1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"},
		},
		"a100-80gb-mig": {
			gpus:       8,
			summary:    gpuSummary{"NVIDIA A100-SXM4-80GB", "NVIDIA", "Ampere", "8.0", "HMM", 80, true},
			migDevices: []int{4, 3, 7, 1, 3, 3, 0, 2},
			migNames:   []string{"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
		},
		"h100-80gb-mig": {
			gpus:       8,
			summary:    gpuSummary{"NVIDIA H100 80GB HBM3", "NVIDIA", "Hopper", "9.0", "HMM", 79, true},
			migDevices: []int{4, 3, 7, 1, 3, 3, 0, 2},
			migNames:   []string{"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
		},
	}
	if got, want := ProfileNames(), len(cases); len(got) != want {
		t.Fatalf("ProfileNames() = %v, want %d profiles, each covered here", got, want)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := newNode(t, Config{NodeName: "node-a", Profile: name})
			info := discover(t, m)
			if got := len(info.GPUs); got != tc.gpus {
				t.Fatalf("GPUs = %d, want %d", got, tc.gpus)
			}
			if !strings.HasPrefix(info.DriverVersion, "580.") || info.CUDADriverVersion != "13.0" {
				t.Errorf("driver %q CUDA %q, want 580.x and 13.0", info.DriverVersion, info.CUDADriverVersion)
			}
			seenUUID, seenBus := map[string]bool{}, map[string]bool{}
			for i, g := range info.GPUs {
				got := gpuSummary{g.ProductName, g.Brand, g.Architecture, g.CUDAComputeCapability, g.AddressingMode, g.MemoryBytes >> 30, g.MIGEnabled}
				if diff := cmp.Diff(tc.summary, got); diff != "" {
					t.Errorf("GPU %d (-want +got):\n%s", i, diff)
				}
				if g.Index != i || g.Minor != i || !strings.HasPrefix(g.UUID, "GPU-") || seenUUID[g.UUID] || seenBus[g.PCIBusID] || g.NUMANode == nil {
					t.Errorf("GPU %d identity: index %d minor %d uuid %q bus %q numa %v (want unique GPU- UUID and bus ID, known NUMA node)", i, g.Index, g.Minor, g.UUID, g.PCIBusID, g.NUMANode)
				}
				seenUUID[g.UUID], seenBus[g.PCIBusID] = true, true
				if g.Fabric.Supported != tc.fabric {
					t.Errorf("GPU %d fabric supported = %v, want %v", i, g.Fabric.Supported, tc.fabric)
				}
				var names []string
				for _, p := range g.MIGProfiles {
					names = append(names, p.Name)
				}
				if diff := cmp.Diff(tc.migNames, names); diff != "" {
					t.Errorf("GPU %d MIG profiles (-want +got):\n%s", i, diff)
				}
				wantMIG := 0
				if tc.migDevices != nil {
					wantMIG = tc.migDevices[i]
				}
				if got := len(g.MIGDevices); got != wantMIG {
					t.Errorf("GPU %d MIG devices = %d, want %d", i, got, wantMIG)
				}
				for _, md := range g.MIGDevices {
					if md.ParentUUID != g.UUID || !strings.HasPrefix(md.UUID, "MIG-") || seenUUID[md.UUID] {
						t.Errorf("GPU %d MIG device %+v: want a unique MIG- UUID whose parent is %s", i, md, g.UUID)
					}
					seenUUID[md.UUID] = true
				}
			}
			clique, err := info.CliqueID()
			if err != nil {
				t.Fatalf("CliqueID: %v", err)
			}
			if tc.clique != (clique != "") {
				t.Errorf("CliqueID = %q, want a clique: %v", clique, tc.clique)
			}
			if tc.clique {
				want := RackClusterUUID(DefaultClusterName, 0) + ".32766"
				if clique != want {
					t.Errorf("CliqueID = %q, want %q", clique, want)
				}
			}
		})
	}
}
