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
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/computedomain-operator/computedomain-operator/internal/fabricmanager"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// TestHGXProfilesCarryTheSharedNVSwitchPartitionTable: both 8-GPU HGX profiles have Fabric Manager's table of one
// 8-GPU, two 4-GPU, four 2-GPU and eight 1-GPU partitions; module 3 is in partitions 0, 1, 3 and 9, as NVIDIA's
// driver shows it on an H200 node.
func TestHGXProfilesCarryTheSharedNVSwitchPartitionTable(t *testing.T) {
	for _, name := range []string{"hgx-h100-8", "hgx-h200-8"} {
		t.Run(name, func(t *testing.T) {
			p, err := LoadProfile(name)
			if err != nil {
				t.Fatal(err)
			}
			fm, err := p.FabricManager("")
			if err != nil || fm == nil {
				t.Fatalf("FabricManager: %v, %v", fm, err)
			}
			parts, err := fm.Partitions()
			if err != nil {
				t.Fatal(err)
			}
			sizes := map[int]int{}
			for _, part := range parts {
				sizes[len(part.GPUs)]++
			}
			if diff := cmp.Diff(map[int]int{8: 1, 4: 2, 2: 4, 1: 8}, sizes); diff != "" {
				t.Errorf("partitions by size (-want +got):\n%s", diff)
			}
			m := fabricmanager.Memberships(parts)[p.GPU.PCIBusIDs[2]]
			if diff := cmp.Diff(fabricmanager.Membership{ModuleID: 3, BySize: map[int]int{8: 0, 4: 1, 2: 3, 1: 9}}, m); diff != "" {
				t.Errorf("module 3 (-want +got):\n%s", diff)
			}
		})
	}
	if fm, err := (&Profile{}).FabricManager(""); fm != nil || err != nil {
		t.Errorf("a profile without partitions: %v, %v; want no Fabric Manager", fm, err)
	}
}

func TestMockFabricManagerKeepsActivePartitionsInItsStateFile(t *testing.T) {
	p, _ := LoadProfile("hgx-h100-8")
	state := filepath.Join(t.TempDir(), "run", "fm.json")
	fm, err := p.FabricManager(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := fm.Activate(3); err != nil {
		t.Fatal(err)
	}
	if err := fm.Activate(1); err == nil || !strings.Contains(err.Error(), "FM_ST_IN_USE") {
		t.Errorf("activating partition 1 (modules 1-4) over 3 (modules 1, 3): %v, want FM_ST_IN_USE", err)
	}
	if err := fm.Activate(99); err == nil || !strings.Contains(err.Error(), "partition 99: not found") {
		t.Errorf("activating an unknown partition: %v", err)
	}
	again, _ := p.FabricManager(state)
	if active, err := fabricmanager.ReadMockActive(state); err != nil || len(active) != 1 || active[0] != 3 {
		t.Errorf("state file: %v, %v; want [3]", active, err)
	}
	if err := again.Deactivate(3); err != nil {
		t.Fatal(err)
	}
	if active, _ := fabricmanager.ReadMockActive(state); len(active) != 0 {
		t.Errorf("after deactivation: %v", active)
	}
}

func TestBadPartitionTablesAreRefusedNamingTheField(t *testing.T) {
	base, err := embeddedProfiles.ReadFile("profiles/hgx-h100-8.yaml")
	if err != nil {
		t.Fatal(err)
	}
	last := "  - {id: 14, gpus: [8]}"
	cases := map[string]struct{ from, to, want string }{
		"a physical ID beyond the GPU count": {from: last, to: "  - {id: 14, gpus: [9]}", want: "fabric.partitions[14].gpus[0] 9: want a physical ID 1..8"},
		"a repeated partition ID":            {from: last, to: "  - {id: 13, gpus: [8]}", want: "fabric.partitions[14].id 13: want a unique ID"},
		"an empty partition":                 {from: last, to: "  - {id: 14, gpus: []}", want: "fabric.partitions[14].gpus: want at least one physical ID"},
		"a malformed PCI device ID":          {from: `pciDeviceId: "0x2330"`, to: `pciDeviceId: "2330"`, want: `gpu.pciDeviceId "2330": want 0x and 4 hex digits`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			bad := strings.Replace(string(base), tc.from, tc.to, 1)
			if bad == string(base) {
				t.Fatal("the edit changed nothing")
			}
			if _, err := ParseProfile([]byte(bad)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseProfile: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestAGPUOffTheNvidiaDriverIsGoneFromNVML: a GPU whose PCI function is bound to vfio-pci is left out of the count
// and the indexes, and its UUID is not found, as with the real library.
func TestAGPUOffTheNvidiaDriverIsGoneFromNVML(t *testing.T) {
	p, _ := LoadProfile("hgx-h100-8")
	bound := map[string]string{p.GPU.PCIBusIDs[2]: "vfio-pci"}
	m := newNode(t, Config{NodeName: "n", Profile: "hgx-h100-8", PCIDriver: func(bus string) string {
		if d, ok := bound[bus]; ok {
			return d
		}
		return "nvidia"
	}})
	if n, _ := m.DeviceGetCount(); n != 7 {
		t.Errorf("count %d, want 7", n)
	}
	dev, r := m.DeviceGetHandleByIndex(2)
	if r != nvml.SUCCESS {
		t.Fatal(r)
	}
	if uuid, _ := dev.GetUUID(); uuid != GPUUUID("n", 3) {
		t.Errorf("index 2 is %s, want the GPU after the passed-through one (%s)", uuid, GPUUUID("n", 3))
	}
	if _, r := m.DeviceGetHandleByUUID(GPUUUID("n", 2)); r != nvml.ERROR_NOT_FOUND {
		t.Errorf("the passed-through GPU's UUID: %v, want ERROR_NOT_FOUND", r)
	}
	delete(bound, p.GPU.PCIBusIDs[2])
	if n, _ := m.DeviceGetCount(); n != 8 {
		t.Errorf("count %d after it is back on nvidia, want 8", n)
	}
}
