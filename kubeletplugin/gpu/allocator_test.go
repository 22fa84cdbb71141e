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
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// chartDeviceClasses loads the DeviceClasses the chart ships, so the allocator
// runs with the real selectors.
type chartDeviceClasses map[string]*resourceapi.DeviceClass

func loadChartDeviceClasses(t testing.TB) chartDeviceClasses {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "../../charts/computedomain-operator/templates")
	out := chartDeviceClasses{}
	for _, f := range []string{"deviceclass-gpu.yaml", "deviceclass-mig.yaml", "deviceclass-vfio.yaml"} {
		raw, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		// A class behind a feature gate is wrapped in {{- if }} ... {{- end }}: the gate is on here.
		var lines []string
		for _, l := range strings.Split(string(raw), "\n") {
			if !strings.HasPrefix(l, "{{") {
				lines = append(lines, l)
			}
		}
		raw = []byte(strings.Join(lines, "\n"))
		var dc resourceapi.DeviceClass
		if err := yaml.UnmarshalStrict(raw, &dc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[dc.Name] = &dc
	}
	return out
}

func (c chartDeviceClasses) List() ([]*resourceapi.DeviceClass, error) {
	var out []*resourceapi.DeviceClass
	for _, dc := range c {
		out = append(out, dc)
	}
	return out, nil
}

func (c chartDeviceClasses) Get(name string) (*resourceapi.DeviceClass, error) {
	if dc, ok := c[name]; ok {
		return dc, nil
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclasses"), name)
}

func TestChartDeviceClasses(t *testing.T) {
	classes := loadChartDeviceClasses(t)
	if got := ptr.Deref(classes["gpu.nvidia.com"].Spec.ExtendedResourceName, ""); got != "nvidia.com/gpu" {
		t.Errorf("gpu.nvidia.com extendedResourceName = %q, want nvidia.com/gpu", got)
	}
	if classes["mig.nvidia.com"].Spec.ExtendedResourceName != nil {
		t.Error("mig.nvidia.com must not claim an extended resource name")
	}
}

type allocRequest struct {
	class string
	count int64
	// selector is an extra CEL selector.
	selector string
}

// allocate runs the scheduler's structured allocator against the slices the
// driver publishes, with some devices already allocated.
func allocate(t *testing.T, d *Driver, allocated []string, matchParent bool, reqs ...allocRequest) []resourceapi.DeviceRequestAllocationResult {
	t.Helper()
	slices := ResourceSlices(testDriver, testNode, d.Resources())
	state := structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID]()}
	for _, name := range allocated {
		state.AllocatedDevices.Insert(structured.MakeDeviceID(testDriver, testNode, name))
	}
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim", Namespace: "default", UID: "claim-uid"}}
	for i, r := range reqs {
		exact := &resourceapi.ExactDeviceRequest{DeviceClassName: r.class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: r.count}
		if r.selector != "" {
			exact.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: r.selector}}}
		}
		claim.Spec.Devices.Requests = append(claim.Spec.Devices.Requests, resourceapi.DeviceRequest{Name: fmt.Sprintf("req-%d", i), Exactly: exact})
	}
	if matchParent {
		claim.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: ptr.To(resourceapi.FullyQualifiedName(testDriver + "/parentUUID"))}}
	}
	features := structured.Features{PartitionableDevices: true, DeviceTaints: true, PrioritizedList: true, AdminAccess: true}
	alloc, err := structured.NewAllocator(context.Background(), features, state, loadChartDeviceClasses(t), slices, cel.NewCache(10, cel.Features{}))
	if err != nil {
		t.Fatal(err)
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}}
	results, err := alloc.Allocate(testContext(t), node, []*resourceapi.ResourceClaim{claim})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) == 0 {
		return nil
	}
	return results[0].Devices.Results
}

// parentsOf maps allocated device names to their parentUUID attribute.
func parentsOf(t *testing.T, d *Driver, results []resourceapi.DeviceRequestAllocationResult) []string {
	t.Helper()
	byName := map[string]resourceapi.Device{}
	for _, dev := range allDevices(d.Resources()) {
		byName[dev.Name] = dev
	}
	var out []string
	for _, r := range results {
		p, _ := strAttr(byName[r.Device], attrParentUUID)
		out = append(out, p)
	}
	return out
}

func TestMatchParentUUIDKeepsMIGDevicesOnOneGPU(t *testing.T) {
	d := newTestNodeEnv(t, "a100-40gb-mig").mustDriver()
	// Group the published MIG devices by parent, in publishing order.
	var parents []string
	byParent := map[string][]string{}
	for _, dev := range allDevices(d.Resources()) {
		p, _ := strAttr(dev, attrParentUUID)
		if _, seen := byParent[p]; !seen {
			parents = append(parents, p)
		}
		byParent[p] = append(byParent[p], dev.Name)
	}
	last := parents[len(parents)-1]
	if len(parents) < 3 || len(byParent[last]) < 2 {
		t.Fatalf("profile needs at least 3 MIG-enabled GPUs with 2+ MIG devices, got %v", byParent)
	}
	// busyExcept marks every MIG device allocated except the first `free`
	// ones of each parent.
	busyExcept := func(free func(parent string) int) []string {
		var busy []string
		for _, p := range parents {
			busy = append(busy, byParent[p][free(p):]...)
		}
		return busy
	}
	oneFreeEach := busyExcept(func(string) int { return 1 })
	twoFreeOnLast := busyExcept(func(p string) int {
		if p == last {
			return 2
		}
		return 1
	})
	twoMIG := allocRequest{class: "mig.nvidia.com", count: 2}

	cases := map[string]struct {
		allocated   []string
		matchParent bool
		// wantParents: nil means the claim cannot be allocated.
		wantParents []string
		wantSplit   bool
	}{
		"with the constraint, the only GPU with two free MIG devices is chosen": {
			allocated: twoFreeOnLast, matchParent: true, wantParents: []string{last, last},
		},
		"without the constraint, first fit spreads the same claim over two GPUs": {
			allocated: twoFreeOnLast, wantSplit: true,
		},
		"with the constraint, one free MIG device per GPU cannot satisfy the claim": {
			allocated: oneFreeEach, matchParent: true,
		},
		"without the constraint, one free MIG device per GPU is enough": {
			allocated: oneFreeEach, wantSplit: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			results := allocate(t, d, tc.allocated, tc.matchParent, twoMIG)
			got := parentsOf(t, d, results)
			switch {
			case tc.wantSplit:
				if len(got) != 2 || got[0] == got[1] {
					t.Errorf("parents = %v, want two different GPUs", got)
				}
			case tc.wantParents == nil:
				if results != nil {
					t.Errorf("allocated %v (parents %v), want no allocation", results, got)
				}
			default:
				if fmt.Sprint(got) != fmt.Sprint(tc.wantParents) {
					t.Errorf("parents = %v, want %v", got, tc.wantParents)
				}
			}
		})
	}
}

func TestPartitionableCountersBoundAllocations(t *testing.T) {
	d := newTestNodeEnv(t, "a100-40gb-mig", withDynamicMIG()).mustDriver()
	gpu0 := gpuUUIDOf(t, d, 0)
	onGPU0 := fmt.Sprintf("device.attributes['gpu.nvidia.com'].parentUUID == '%s'", gpu0)
	small := "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"
	var gpu0Small []string
	for _, dev := range allDevices(d.Resources()) {
		p, _ := strAttr(dev, attrParentUUID)
		prof, _ := strAttr(dev, attrProfile)
		if p == gpu0 && prof == "1g.5gb" {
			gpu0Small = append(gpu0Small, dev.Name)
		}
	}
	cases := map[string]struct {
		allocated []string
		reqs      []allocRequest
		match     bool
		wantCount int // 0: cannot allocate
	}{
		"two small partitions of one GPU": {
			reqs: []allocRequest{{class: "mig.nvidia.com", count: 2, selector: small}}, match: true, wantCount: 2,
		},
		"seven small partitions fill a GPU": {
			reqs: []allocRequest{{class: "mig.nvidia.com", count: 7, selector: small + " && " + onGPU0}}, wantCount: 7,
		},
		"an eighth small partition does not fit": {
			reqs: []allocRequest{{class: "mig.nvidia.com", count: 8, selector: small + " && " + onGPU0}},
		},
		"the full GPU is free while no partition is allocated": {
			reqs:      []allocRequest{{class: "gpu.nvidia.com", count: 1, selector: fmt.Sprintf("device.attributes['gpu.nvidia.com'].uuid == '%s'", gpu0)}},
			wantCount: 1,
		},
		"the full GPU consumes all counters, so one partition blocks it": {
			allocated: gpu0Small[:1],
			reqs:      []allocRequest{{class: "gpu.nvidia.com", count: 1, selector: fmt.Sprintf("device.attributes['gpu.nvidia.com'].uuid == '%s'", gpu0)}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			results := allocate(t, d, tc.allocated, tc.match, tc.reqs...)
			if len(results) != tc.wantCount {
				t.Errorf("allocated %d devices (%v), want %d", len(results), results, tc.wantCount)
			}
			if tc.match && len(results) > 0 {
				got := parentsOf(t, d, results)
				for _, p := range got {
					if p != got[0] {
						t.Errorf("parents %v, want one", got)
					}
				}
			}
		})
	}
}

// onBus selects the devices of the GPU at a PCI bus ID.
func onBus(busID string) string {
	return fmt.Sprintf("device.attributes['resource.kubernetes.io'].pciBusID == '%s'", busID)
}

// TestPassthroughAndGPUOfOneGPUAreNeverBothAllocated: with PassthroughSupport every GPU is published twice (gpu-N and
// gpu-vfio-N); the real structured allocator never hands out both for one GPU, in one claim or across claims, as a
// full GPU or as MIG partitions.
func TestPassthroughAndGPUOfOneGPUAreNeverBothAllocated(t *testing.T) {
	hgx := newTestNodeEnv(t, "hgx-h100-8", withPassthrough()).mustDriver()
	a100 := newTestNodeEnv(t, "a100-40gb-mig", withDynamicMIG(), withPassthrough()).mustDriver()
	a100GPU0 := gpuUUIDOf(t, a100, 0)
	var a100Bus0, a100Vfio0, a100Small0 string
	for _, dev := range allDevices(a100.Resources()) {
		bus, _ := strAttr(dev, "resource.kubernetes.io/pciBusID")
		typ, _ := strAttr(dev, attrType)
		parent, _ := strAttr(dev, attrParentUUID)
		prof, _ := strAttr(dev, attrProfile)
		switch {
		case dev.Name == "gpu-0":
			a100Bus0 = bus
		case typ == "vfio" && a100Vfio0 == "" && bus != "" && bus == a100Bus0:
			a100Vfio0 = dev.Name
		case parent == a100GPU0 && prof == "1g.5gb" && a100Small0 == "":
			a100Small0 = dev.Name
		}
	}
	if a100Bus0 == "" || a100Vfio0 == "" || a100Small0 == "" {
		t.Fatalf("A100 node: bus %q, vfio device %q, small partition %q of GPU 0", a100Bus0, a100Vfio0, a100Small0)
	}
	vfio := func(count int64, selector string) allocRequest {
		return allocRequest{class: "vfio.gpu.nvidia.com", count: count, selector: selector}
	}
	gpu := func(count int64, selector string) allocRequest {
		return allocRequest{class: "gpu.nvidia.com", count: count, selector: selector}
	}
	cases := map[string]struct {
		d         *Driver
		allocated []string
		reqs      []allocRequest
		wantCount int // 0: cannot allocate
	}{
		"one claim asking for a GPU for a VM and the same GPU as a GPU gets neither": {
			d: hgx, reqs: []allocRequest{vfio(1, onBus(hgxBusIDs[2])), gpu(1, onBus(hgxBusIDs[2]))},
		},
		"every GPU for VMs and one more as a GPU cannot be allocated": {
			d: hgx, reqs: []allocRequest{vfio(8, ""), gpu(1, "")},
		},
		"four GPUs for VMs and four as GPUs take eight different GPUs": {
			d: hgx, reqs: []allocRequest{vfio(4, ""), gpu(4, "")}, wantCount: 8,
		},
		"a GPU a claim holds is not also a VM's": {
			d: hgx, allocated: []string{"gpu-2"}, reqs: []allocRequest{vfio(1, onBus(hgxBusIDs[2]))},
		},
		"a GPU a VM holds is not also a claim's GPU": {
			d: hgx, allocated: []string{"gpu-vfio-2"}, reqs: []allocRequest{gpu(1, onBus(hgxBusIDs[2]))},
		},
		"another GPU is free for a VM": {
			d: hgx, allocated: []string{"gpu-2"}, reqs: []allocRequest{vfio(1, onBus(hgxBusIDs[3]))}, wantCount: 1,
		},
		"a MIG partition of a GPU keeps the GPU from a VM": {
			d: a100, allocated: []string{a100Small0}, reqs: []allocRequest{vfio(1, onBus(a100Bus0))},
		},
		"a GPU a VM holds has no MIG partition free": {
			d: a100, allocated: []string{a100Vfio0}, reqs: []allocRequest{{class: "mig.nvidia.com", count: 1, selector: fmt.Sprintf("device.attributes['gpu.nvidia.com'].parentUUID == '%s'", a100GPU0)}},
		},
		"one claim asking for a GPU for a VM and a MIG partition of it gets neither": {
			d: a100, reqs: []allocRequest{vfio(1, onBus(a100Bus0)), {class: "mig.nvidia.com", count: 1, selector: fmt.Sprintf("device.attributes['gpu.nvidia.com'].parentUUID == '%s'", a100GPU0)}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			results := allocate(t, tc.d, tc.allocated, false, tc.reqs...)
			if len(results) != tc.wantCount {
				t.Fatalf("allocated %d devices (%v), want %d", len(results), results, tc.wantCount)
			}
			buses := map[string]string{}
			byName := map[string]resourceapi.Device{}
			for _, dev := range allDevices(tc.d.Resources()) {
				byName[dev.Name] = dev
			}
			for _, r := range results {
				bus, _ := strAttr(byName[r.Device], "resource.kubernetes.io/pciBusID")
				if other, dup := buses[bus]; dup {
					t.Errorf("GPU %s allocated twice: %s and %s", bus, other, r.Device)
				}
				buses[bus] = r.Device
			}
		})
	}
}

// TestStaticMIGGPUsHaveNoVfioDevice: a GPU with MIG devices is not published for passthrough (unbinding it would
// take the MIG devices from their owners).
func TestStaticMIGGPUsHaveNoVfioDevice(t *testing.T) {
	d := newTestNodeEnv(t, "a100-40gb-mig", withPassthrough()).mustDriver()
	inv := d.Inventory()
	for _, dev := range allDevices(d.Resources()) {
		if typ, _ := strAttr(dev, attrType); typ != "vfio" {
			continue
		}
		bus, _ := strAttr(dev, "resource.kubernetes.io/pciBusID")
		if g, ok := inv.gpuByBusID(bus); ok && len(g.MigDevices) > 0 {
			t.Errorf("%s published for GPU %s, which has %d MIG devices", dev.Name, bus, len(g.MigDevices))
		}
	}
}

// TestSharesAndPassthroughOfOneGPU: with consumable shares and passthrough on, several claims share a GPU (its
// counter is taken once, whatever the number of shares), and then no VM gets it; a GPU a VM holds gets no share.
func TestSharesAndPassthroughOfOneGPU(t *testing.T) {
	d := newTestNodeEnv(t, "hgx-h100-8", withPassthrough(), withShares(Shares{Mode: SharesUnlimited})).mustDriver()
	s := newShareScheduler(t, d)
	for i := range 3 {
		if r := s.allocate("gpu.nvidia.com", onBus(hgxBusIDs[2]), nil); r == nil {
			t.Fatalf("share %d of GPU %s does not fit", i+1, hgxBusIDs[2])
		}
	}
	if r := s.allocate("vfio.gpu.nvidia.com", onBus(hgxBusIDs[2]), nil); r != nil {
		t.Errorf("a VM got %s, a GPU that claims share", r.Device)
	}
	if r := s.allocate("vfio.gpu.nvidia.com", onBus(hgxBusIDs[3]), nil); r == nil {
		t.Fatalf("no VM gets the free GPU %s", hgxBusIDs[3])
	}
	if r := s.allocate("gpu.nvidia.com", onBus(hgxBusIDs[3]), nil); r != nil {
		t.Errorf("a share of %s, which a VM holds", r.Device)
	}
}
