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
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

func activePartitions(t *testing.T, e *testNodeEnv) []int {
	t.Helper()
	parts, err := e.fm.Partitions()
	if err != nil {
		t.Fatal(err)
	}
	active := []int{}
	for _, p := range parts {
		if p.Active {
			active = append(active, p.ID)
		}
	}
	return active
}

func intAttrOf(d resourceapi.Device, name resourceapi.QualifiedName) (int64, bool) {
	a, ok := d.Attributes[name]
	if !ok || a.IntValue == nil {
		return 0, false
	}
	return *a.IntValue, true
}

// TestFabricPartitionAttributes: on an HGX node with Fabric Manager, full GPUs and vfio devices carry NVIDIA's
// gpuModuleID and partition<N> (HGX H100 table: module 3 is in partitions 0, 1, 3 and 9); MIG devices do not.
func TestFabricPartitionAttributes(t *testing.T) {
	d := newTestNodeEnv(t, "hgx-h100-8", withPassthrough(), withFabricManager()).mustDriver()
	want := map[string]int64{"gpuModuleID": 3, "partition8": 0, "partition4": 1, "partition2": 3, "partition1": 9}
	for _, dev := range allDevices(d.Resources()) {
		if dev.Name != "gpu-2" && dev.Name != "gpu-vfio-2" {
			continue
		}
		got := map[string]int64{}
		for name := range want {
			if v, ok := intAttrOf(dev, resourceapi.QualifiedName(name)); ok {
				got[name] = v
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s partition attributes (-want +got):\n%s", dev.Name, diff)
		}
	}
	off := newTestNodeEnv(t, "hgx-h100-8", withPassthrough()).mustDriver()
	for _, dev := range allDevices(off.Resources()) {
		if _, ok := dev.Attributes["partition1"]; ok {
			t.Errorf("gate off: %s has partition attributes", dev.Name)
		}
	}
}

// TestFabricPartitionActiveWhilePrepared: a claim of the two vfio devices of partition 3 (modules 1 and 3) activates
// it; a claim whose GPUs are not one partition fails naming the constraint to use; a partition overlapping an active
// one fails with Fabric Manager's reason and leaves its GPUs on nvidia; unprepare deactivates.
func TestFabricPartitionActiveWhilePrepared(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8", withPassthrough(), withFabricManager())
	d := e.mustDriver()
	pair := utiltesting.MakeResourceClaim("pair", "default").UID("uid-pair").
		Device("gpus", testDriver, testNode, "gpu-vfio-0").Device("gpus", testDriver, testNode, "gpu-vfio-2").Obj()
	if _, err := prepareOne(t, d, pair); err != nil {
		t.Fatal(err)
	}
	if got := activePartitions(t, e); !slices.Equal(got, []int{3}) {
		t.Errorf("active partitions %v while the pair is prepared, want [3]", got)
	}

	notOne := utiltesting.MakeResourceClaim("cross", "default").UID("uid-cross").
		Device("gpus", testDriver, testNode, "gpu-4").Device("gpus", testDriver, testNode, "gpu-5").Obj()
	_, err := prepareOne(t, d, notOne)
	if err == nil || !strings.Contains(err.Error(), "do not match any Fabric Manager partition") || !strings.Contains(err.Error(), "matchAttribute: gpu.nvidia.com/partition2") {
		t.Errorf("prepare of modules 5 and 6: %v, want a refusal naming matchAttribute gpu.nvidia.com/partition2", err)
	}

	// Modules 2 and 4 are partition 4, which shares no GPU with partition 3.
	quad := utiltesting.MakeResourceClaim("quad", "default").UID("uid-quad").
		Device("gpus", testDriver, testNode, "gpu-1").Device("gpus", testDriver, testNode, "gpu-3").Obj()
	if _, err := prepareOne(t, d, quad); err != nil {
		t.Fatalf("modules 2 and 4 (partition 4) next to partition 3: %v", err)
	}
	if got := activePartitions(t, e); !slices.Equal(got, []int{3, 4}) {
		t.Errorf("active partitions %v, want [3 4]", got)
	}
	// Someone else (a VM outside Kubernetes) holds partition 6, modules 6 and 8; partition 2 (modules 5-8) shares
	// them, so Fabric Manager refuses it.
	if err := e.fm.Activate(6); err != nil {
		t.Fatal(err)
	}
	upper := utiltesting.MakeResourceClaim("upper", "default").UID("uid-upper").
		Device("gpus", testDriver, testNode, "gpu-vfio-4").Device("gpus", testDriver, testNode, "gpu-vfio-5").
		Device("gpus", testDriver, testNode, "gpu-vfio-6").Device("gpus", testDriver, testNode, "gpu-vfio-7").Obj()
	_, err = prepareOne(t, d, upper)
	if err == nil || !strings.Contains(err.Error(), "activate Fabric Manager partition 2") || !strings.Contains(err.Error(), "FM_ST_IN_USE") {
		t.Errorf("prepare of partition 2 over active partition 6: %v, want Fabric Manager's refusal", err)
	}
	if drv, _ := pciState(t, e, hgxBusIDs[4]); drv != "nvidia" {
		t.Errorf("module 5 is on %q after the refused activation, want nvidia", drv)
	}
	if err := e.fm.Deactivate(6); err != nil {
		t.Fatal(err)
	}

	for _, uid := range []string{"uid-pair", "uid-quad", "uid-upper"} {
		if err := unprepare(t, d, uid)[types.UID(uid)]; err != nil {
			t.Fatal(err)
		}
	}
	if got := activePartitions(t, e); len(got) != 0 {
		t.Errorf("active partitions %v after every claim is unprepared, want none", got)
	}
}
