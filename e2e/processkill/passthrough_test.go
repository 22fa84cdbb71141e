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
	"slices"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/computedomain-operator/computedomain-operator/internal/fabricmanager"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

// The HGX profile's GPUs 0 and 2 (modules 1 and 3) are Fabric Manager partition 3.
var passthroughBuses = []string{"0000:1b:00.0", "0000:52:00.0"}

const passthroughPartition = 3

// TestGPUPluginKilledInPassthroughRecovers: the GPU plugin process (PassthroughSupport and
// FabricManagerPartitioning on, a claim of the two vfio devices of partition 3) is SIGKILLed between the
// Fabric Manager activation and the checkpoint, between the unbind from nvidia and the bind to vfio-pci, and on
// the way back between the unbind from vfio-pci and the bind to nvidia. After each kill a GPU may sit on no
// driver; the restarted plugin finishes the kubelet's retried call: prepared, both GPUs on vfio-pci and the
// partition active; unprepared, both on nvidia without override and the partition inactive.
func TestGPUPluginKilledInPassthroughRecovers(t *testing.T) {
	if cluster.err != nil {
		t.Fatal(cluster.err)
	}
	for i, point := range []string{"fm-partition-activated", "vfio-unbound", "unprepare-vfio-unbound"} {
		t.Run(point, func(t *testing.T) {
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(1)))
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
			defer cancel()
			k := &gpuKind{passthrough: true}
			n := newNode(ctx, t, k, "pk-vfio-"+string(rune('a'+i)))
			k.fakeHostRoot(t, n)
			startLogged(t, n)
			waitRegistered(t, n, n.proc.started)
			claim := createClaims(ctx, t, n, []*resourceapi.ResourceClaim{
				utiltesting.MakeResourceClaim("vm", "default").Request("gpus", "vfio.gpu.nvidia.com").
					Device("gpus", gpuDriver, n.name, "gpu-vfio-0").Device("gpus", gpuDriver, n.name, "gpu-vfio-2").Obj(),
			})[0]
			pod := podOf(n, claim)
			n.setActive(pod, true)

			// An unarmed incarnation's round says at which hit the point comes.
			restartUnarmed(t, n)
			for _, prepare := range []bool{true, false} {
				if err := call(ctx, n, prepare, pod); err != nil {
					t.Fatal(err)
				}
			}
			at := slices.Index(readLines(n.proc.crashLog), point) + 1
			if at == 0 {
				t.Fatalf("a prepare and unprepare did not pass %s: %v", point, readLines(n.proc.crashLog))
			}
			expectPassthrough(t, n, false)

			n.proc.stop()
			n.proc.start(at)
			waitRegistered(t, n, n.proc.started)
			killed := false
			for _, prepare := range []bool{true, false} {
				err := call(ctx, n, prepare, pod)
				if err == errKilled { //nolint:errorlint // call returns errKilled itself
					killed = true
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if cause, _, err := n.proc.death(); !killed || err != nil || cause != point {
				t.Fatalf("the plugin died at %q (%v, killed %v), want %s", cause, err, killed, point)
			}
			// The kill lands where it says: the partition is active, and at an unbind the GPU is on no driver.
			drv, _ := hostroot.New(n.hostRoot).PCIDriver(passthroughBuses[0])
			wantDrv := map[string]string{"fm-partition-activated": hostroot.NvidiaPCIDriver}[point]
			if active := activeOn(t, n); drv != wantDrv || !slices.Equal(active, []int{passthroughPartition}) {
				t.Fatalf("after the kill at %s: %s is on %q with partitions %v active, want %q with [%d]", point, passthroughBuses[0], drv, active, wantDrv, passthroughPartition)
			}

			// The kubelet retries: a prepare killed is prepared again, an unprepare killed is unprepared.
			n.proc.start(0)
			waitRegistered(t, n, n.proc.started)
			if point != "unprepare-vfio-unbound" {
				if err := call(ctx, n, true, pod); err != nil {
					t.Fatal(err)
				}
				expectPassthrough(t, n, true)
			}
			if err := call(ctx, n, false, pod); err != nil {
				t.Fatal(err)
			}
			n.setActive(pod, false)
			expectPassthrough(t, n, false)
		})
	}
}

func activeOn(t *testing.T, n *node) []int {
	t.Helper()
	active, err := fabricmanager.ReadMockActive(hostroot.New(n.hostRoot).Path(mock.FabricManagerStateFile))
	if err != nil {
		t.Fatal(err)
	}
	return active
}

// expectPassthrough checks both GPUs of the claim: on vfio-pci with the override and partition 3 active while the
// claim is prepared, else on nvidia without override and no partition active.
func expectPassthrough(t *testing.T, n *node, prepared bool) {
	t.Helper()
	root := hostroot.New(n.hostRoot)
	wantDrv, wantOverride, wantActive := hostroot.NvidiaPCIDriver, "(null)", []int{}
	if prepared {
		wantDrv, wantOverride, wantActive = hostroot.VFIOPCIDriver, hostroot.VFIOPCIDriver, []int{passthroughPartition}
	}
	for _, bus := range passthroughBuses {
		drv, err := root.PCIDriver(bus)
		if err != nil {
			t.Fatal(err)
		}
		override, err := root.ReadSysfs(hostroot.PCIDevicePath(bus) + "/driver_override")
		if err != nil {
			t.Fatal(err)
		}
		if drv != wantDrv || override != wantOverride {
			t.Errorf("GPU %s on %q (override %q), want %q (%q)", bus, drv, override, wantDrv, wantOverride)
		}
	}
	if got := activeOn(t, n); !slices.Equal(got, wantActive) {
		t.Errorf("active partitions %v, want %v", got, wantActive)
	}
}
