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
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

func TestAGB200ClusterHasOneCliquePerRack(t *testing.T) {
	nodes, err := ClusterSpec{Name: "sim", Profile: "gb200-nvl72", Racks: 2}.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	members := map[string][]string{}
	gpus := map[string]bool{}
	for _, n := range nodes {
		m := newNode(t, n.Config)
		clique, err := nvml.NodeCliqueID(m)
		if err != nil {
			t.Fatalf("node %s: %v", n.Name, err)
		}
		members[clique] = append(members[clique], n.Name)
		info := discover(t, m)
		for _, g := range info.GPUs {
			if gpus[g.UUID] {
				t.Errorf("GPU UUID %s appears on two nodes", g.UUID)
			}
			gpus[g.UUID] = true
		}
	}
	sizes := map[string]int{}
	for c, ns := range members {
		sizes[c] = len(ns)
	}
	want := map[string]int{
		RackClusterUUID("sim", 0) + ".32766": 18,
		RackClusterUUID("sim", 1) + ".32766": 18,
	}
	if diff := cmp.Diff(want, sizes); diff != "" {
		t.Errorf("nodes per clique (-want +got):\n%s", diff)
	}
	if got := members[RackClusterUUID("sim", 1)+".32766"][0]; got != "sim-r01-n00" {
		t.Errorf("first node of rack 1 = %q, want sim-r01-n00", got)
	}
	if len(gpus) != 2*18*4 {
		t.Errorf("distinct GPUs = %d, want %d", len(gpus), 2*18*4)
	}
}

func TestAnHGXClusterHasNoClique(t *testing.T) {
	nodes, err := ClusterSpec{Profile: "hgx-h100-8", Racks: 3}.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 3 {
		t.Fatalf("nodes = %d, want 3 (one per rack without a fabric)", len(nodes))
	}
	for _, n := range nodes {
		if c, err := nvml.NodeCliqueID(newNode(t, n.Config)); c != "" || err != nil {
			t.Errorf("node %s clique = %q, %v; want none", n.Name, c, err)
		}
	}
}

func TestIdentitiesAreStableAcrossRestarts(t *testing.T) {
	first := discover(t, newNode(t, Config{NodeName: "node-a", Profile: "h100-80gb-mig"}))
	again := discover(t, newNode(t, Config{NodeName: "node-a", Profile: "h100-80gb-mig"}))
	other := discover(t, newNode(t, Config{NodeName: "node-b", Profile: "h100-80gb-mig"}))
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("restarted node differs (-first +again):\n%s", diff)
	}
	if first.GPUs[0].UUID == other.GPUs[0].UUID || first.GPUs[0].MIGDevices[0].UUID == other.GPUs[0].MIGDevices[0].UUID {
		t.Error("two nodes share GPU or MIG UUIDs")
	}
}

// TestNodesAreIndependentAndConcurrencySafe runs many nodes in one process,
// in parallel, mixing reads, MIG changes and faults (run with -race).
func TestNodesAreIndependentAndConcurrencySafe(t *testing.T) {
	a := newNode(t, Config{NodeName: "node-a", Profile: "a100-40gb-mig", MIG: MIGDynamic})
	b := newNode(t, Config{NodeName: "node-b", Profile: "a100-40gb-mig", MIG: MIGDynamic})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			m := a
			if w%2 == 1 {
				m = b
			}
			dev, _ := m.DeviceGetHandleByIndex(w / 2)
			info, _ := dev.GetGpuInstanceProfileInfo(nvml.GPU_INSTANCE_PROFILE_1_SLICE)
			for i := 0; i < 50; i++ {
				gi, r := dev.CreateGpuInstanceWithPlacement(&info, &nvml.GpuInstancePlacement{Start: uint32(i % 7), Size: 1})
				if r == nvml.SUCCESS {
					ci, _ := gi.GetComputeInstanceProfileInfo(nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE, 0)
					c, _ := gi.CreateComputeInstance(&ci)
					_, _ = nvml.Discover(t.Context(), m)
					c.Destroy()
					gi.Destroy()
				}
				_, _ = m.InjectXid(w/2, 13)
			}
		}(w)
	}
	wg.Wait()
	for _, m := range []*Lib{a, b} {
		for _, g := range discover(t, m).GPUs {
			if len(g.MIGDevices) != 0 {
				t.Errorf("%s GPU %d has %d MIG devices left", m.NodeName(), g.Index, len(g.MIGDevices))
			}
		}
	}
}

func TestAProfileDescribesItsFakeHostRoot(t *testing.T) {
	p, err := LoadProfile("gb200-nvl72")
	if err != nil {
		t.Fatal(err)
	}
	root, err := hostroot.Fake(t.TempDir(), p.FakeHostRootSpec("node-a"))
	if err != nil {
		t.Fatal(err)
	}
	info := discover(t, newNode(t, Config{NodeName: "node-a", ProfileSpec: p}))
	for _, g := range info.GPUs {
		if _, err := os.Stat(root.Path(fmt.Sprintf("/dev/nvidia%d", g.Minor))); err != nil {
			t.Errorf("GPU %d: %v", g.Minor, err)
		}
		if _, err := os.Lstat(root.Path("/sys/bus/pci/devices/" + g.PCIBusID)); err != nil {
			t.Errorf("GPU %d sysfs device: %v", g.Minor, err)
		}
	}
}
