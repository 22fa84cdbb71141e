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
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
	"github.com/computedomain-operator/computedomain-operator/internal/featuregates"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

const mpsConfig = `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS"}}`

func TestParseShares(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    Shares
		wantErr string
	}{
		"empty is NVIDIA's chart default, disabled": {in: "", want: Shares{Mode: SharesDisabled}},
		"disabled":                    {in: "disabled", want: Shares{Mode: SharesDisabled}},
		"unlimited":                   {in: "unlimited", want: Shares{Mode: SharesUnlimited}},
		"memory":                      {in: " memory ", want: Shares{Mode: SharesMemory}},
		"an integer share count":      {in: "4", want: Shares{Mode: SharesCount, Count: 4}},
		"zero shares":                 {in: "0", wantErr: `--consumable-shares "0": allowed: disabled, unlimited, memory, or a positive integer`},
		"a negative count":            {in: "-2", wantErr: `--consumable-shares "-2": allowed`},
		"a mode NVIDIA does not have": {in: "half", wantErr: `--consumable-shares "half": allowed`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseShares(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("ParseShares(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestSharesNeedTheirGate(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	_, err := e.newDriver(func(c *Config, _ *Deps) { c.Shares = Shares{Mode: SharesUnlimited} })
	if err == nil || !strings.Contains(err.Error(), "needs the feature gate ConsumableShares") {
		t.Errorf("unlimited shares with the gate at its default (off): error = %v", err)
	}
	if featuregates.Defaults(FeatureGates).Enabled(ConsumableShares) {
		t.Error("ConsumableShares is on by default; NVIDIA's is alpha and off")
	}
}

func qty(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }

// TestShareablePolicies: NVIDIA's request policies per mode, on a device whose memory is not a whole number of
// MiB (real NVML reports bytes): the capacity is rounded down to the 1Mi step, which the API server requires of
// a policy's max and default.
func TestShareablePolicies(t *testing.T) {
	const mib = 1 << 20
	memBytes := uint64(81559*mib + 12345)
	rounded := *resource.NewQuantity(81559*mib, resource.BinarySI)
	unlimited := &resourceapi.CapacityRequestPolicy{
		Default:    qty("0"),
		ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: qty("0"), Max: ptr.To(rounded.DeepCopy()), Step: qty("1Mi")},
	}
	cases := map[string]struct {
		shares Shares
		want   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity
		multi  bool
	}{
		"disabled leaves the device exclusive": {
			shares: Shares{Mode: SharesDisabled},
			want:   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{capMemory: quantity(memBytes)},
		},
		"unlimited: memory default 0, min 0, step 1Mi, max the memory": {
			shares: Shares{Mode: SharesUnlimited}, multi: true,
			want: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{capMemory: {Value: rounded, RequestPolicy: unlimited}},
		},
		"memory: a claim gets all memory unless it asks for less, at least 1Mi": {
			shares: Shares{Mode: SharesMemory}, multi: true,
			want: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{capMemory: {Value: rounded, RequestPolicy: &resourceapi.CapacityRequestPolicy{
				Default:    ptr.To(rounded.DeepCopy()),
				ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: qty("1Mi"), Max: ptr.To(rounded.DeepCopy()), Step: qty("1Mi")},
			}}},
		},
		"an integer: memory as unlimited, plus N shares, one per claim by default": {
			shares: Shares{Mode: SharesCount, Count: 4}, multi: true,
			want: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				capMemory: {Value: rounded, RequestPolicy: unlimited},
				capShares: {Value: resource.MustParse("4"), RequestPolicy: &resourceapi.CapacityRequestPolicy{
					Default:    qty("1"),
					ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: qty("1"), Max: qty("4"), Step: qty("1")},
				}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dev := resourceapi.Device{Name: "gpu-0", Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{capMemory: quantity(memBytes)}}
			tc.shares.shareable(&dev)
			if diff := cmp.Diff(tc.want, dev.Capacity); diff != "" {
				t.Errorf("capacity (-want +got):\n%s", diff)
			}
			if got := ptr.Deref(dev.AllowMultipleAllocations, false); got != tc.multi {
				t.Errorf("allowMultipleAllocations = %v, want %v", got, tc.multi)
			}
		})
	}
}

func TestWhichDevicesAreShareable(t *testing.T) {
	cases := map[string]struct {
		profile string
		opts    []envOption
		// want maps device name prefixes to whether they allow multiple allocations.
		want func(dev resourceapi.Device) bool
	}{
		"every full GPU":          {profile: "hgx-h100-8", want: func(resourceapi.Device) bool { return true }},
		"every static MIG device": {profile: "a100-40gb-mig", want: func(resourceapi.Device) bool { return true }},
		"partitionable MIG: the full GPU, not its partitions": {profile: "a100-40gb-mig", opts: []envOption{withDynamicMIG()},
			want: func(dev resourceapi.Device) bool {
				typ, _ := strAttr(dev, attrType)
				return typ == deviceTypeGpu
			}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newTestNodeEnv(t, tc.profile, append(tc.opts, withShares(Shares{Mode: SharesUnlimited}))...)
			d := e.mustDriver()
			devs := allDevices(d.Resources())
			if len(devs) == 0 {
				t.Fatal("no devices")
			}
			for _, dev := range devs {
				if got, want := ptr.Deref(dev.AllowMultipleAllocations, false), tc.want(dev); got != want {
					t.Errorf("%s: allowMultipleAllocations = %v, want %v", dev.Name, got, want)
				}
			}
		})
	}
}

// shareScheduler runs the scheduler's allocator (consumable capacity on, as in 1.37) claim after claim against
// the driver's slices, remembering what it allocated as the scheduler's allocated state does.
type shareScheduler struct {
	t      *testing.T
	slices []*resourceapi.ResourceSlice
	state  structured.AllocatedState
	n      int
}

func newShareScheduler(t *testing.T, d *Driver) *shareScheduler {
	return &shareScheduler{t: t, slices: ResourceSlices(testDriver, testNode, d.Resources()), state: structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}}
}

// allocate allocates one claim with one request of class, optionally asking for capacity and selecting with
// CEL; it returns nil when the claim does not fit.
func (s *shareScheduler) allocate(class, selector string, capacity map[string]string) *resourceapi.DeviceRequestAllocationResult {
	s.t.Helper()
	s.n++
	exact := &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}
	if selector != "" {
		exact.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: selector}}}
	}
	if len(capacity) > 0 {
		exact.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{}}
		for k, v := range capacity {
			exact.Capacity.Requests[resourceapi.QualifiedName(k)] = resource.MustParse(v)
		}
	}
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d", s.n), Namespace: "default", UID: types.UID(fmt.Sprintf("uid-%d", s.n))}}
	claim.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "gpu", Exactly: exact}}
	features := structured.Features{PartitionableDevices: true, ConsumableCapacity: true, DeviceTaints: true, PrioritizedList: true, AdminAccess: true}
	alloc, err := structured.NewAllocator(context.Background(), features, s.state, loadChartDeviceClasses(s.t), s.slices, cel.NewCache(10, cel.Features{EnableConsumableCapacity: true}))
	if err != nil {
		s.t.Fatal(err)
	}
	results, err := alloc.Allocate(testContext(s.t), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}}, []*resourceapi.ResourceClaim{claim})
	if err != nil {
		s.t.Fatal(err)
	}
	if len(results) == 0 {
		return nil
	}
	r := results[0].Devices.Results[0]
	id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
	if r.ShareID == nil {
		s.state.AllocatedDevices.Insert(id)
	} else {
		s.state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
		s.state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
	}
	return &r
}

// TestTheSchedulerSharesAGPUByItsCapacity: with the driver's slices the scheduler's own allocator puts several
// claims on one GPU and refuses what would overbook it, in each of NVIDIA's modes.
func TestTheSchedulerSharesAGPUByItsCapacity(t *testing.T) {
	onlyGPU0 := func(t *testing.T, d *Driver) string {
		return fmt.Sprintf("device.attributes['%s'].uuid == '%s'", testDriver, gpuUUIDOf(t, d, 0))
	}
	cases := map[string]struct {
		shares   Shares
		capacity map[string]string
		fit      int
		// unbounded: every one of fit claims fits, and more would.
		unbounded bool
	}{
		"unlimited: claims without capacity requests never run out": {shares: Shares{Mode: SharesUnlimited}, fit: 20, unbounded: true},
		"unlimited: memory requests are still counted":              {shares: Shares{Mode: SharesUnlimited}, capacity: map[string]string{"memory": "30Gi"}, fit: 2},
		"memory: two 30Gi claims fit an 80GB GPU, a third does not": {shares: Shares{Mode: SharesMemory}, capacity: map[string]string{"memory": "30Gi"}, fit: 2},
		"memory: a claim without a request takes the whole GPU":     {shares: Shares{Mode: SharesMemory}, fit: 1},
		"memory: more than the GPU has never fits":                  {shares: Shares{Mode: SharesMemory}, capacity: map[string]string{"memory": "100Gi"}, fit: 0},
		"4 shares: four claims, not five":                           {shares: Shares{Mode: SharesCount, Count: 4}, fit: 4},
		"4 shares: a claim may take two":                            {shares: Shares{Mode: SharesCount, Count: 4}, capacity: map[string]string{"shares": "2"}, fit: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newTestNodeEnv(t, "hgx-h100-8", withShares(tc.shares))
			d := e.mustDriver()
			s := newShareScheduler(t, d)
			fitted, attempts := 0, tc.fit+1
			if tc.unbounded {
				attempts = tc.fit
			}
			for range attempts {
				r := s.allocate("gpu.nvidia.com", onlyGPU0(t, d), tc.capacity)
				if r == nil {
					break
				}
				if r.ShareID == nil {
					t.Fatalf("claim %d got %s without a share ID", fitted+1, r.Device)
				}
				if want, ok := tc.capacity["memory"]; ok && !resource.MustParse(want).Equal(r.ConsumedCapacity[capMemory]) {
					t.Errorf("consumed memory %v, want %s", r.ConsumedCapacity, want)
				}
				fitted++
			}
			if fitted != tc.fit {
				t.Errorf("%d claims fit on gpu-0, want %d", fitted, tc.fit)
			}
		})
	}
}

// TestSharesAndPartitionsNeverDoubleBookAGPU: on a partitionable GPU the shared full GPU consumes the GPU's
// counters once, for all its shares: while a share holds it the scheduler places no partition there, and while
// a partition holds it no share; and the plugin refuses the same at prepare, should an allocation get there.
func TestSharesAndPartitionsNeverDoubleBookAGPU(t *testing.T) {
	e := newTestNodeEnv(t, "a100-40gb-mig", withDynamicMIG(), withShares(Shares{Mode: SharesUnlimited}))
	d := e.mustDriver()
	gpu0 := gpuUUIDOf(t, d, 0)
	onGPU0 := fmt.Sprintf("device.attributes['%s'].uuid == '%s'", testDriver, gpu0)
	partOfGPU0 := fmt.Sprintf("device.attributes['%s'].parentUUID == '%s'", testDriver, gpu0)

	s := newShareScheduler(t, d)
	for i := range 2 {
		if s.allocate("gpu.nvidia.com", onGPU0, nil) == nil {
			t.Fatalf("share %d of the full GPU did not fit", i+1)
		}
	}
	if r := s.allocate("mig.nvidia.com", partOfGPU0, nil); r != nil {
		t.Errorf("a partition %s was allocated on a GPU two shares hold", r.Device)
	}
	s = newShareScheduler(t, d)
	part := s.allocate("mig.nvidia.com", partOfGPU0, nil)
	if part == nil {
		t.Fatal("no partition fits on a free GPU")
	}
	if r := s.allocate("gpu.nvidia.com", onGPU0, nil); r != nil {
		t.Errorf("a share of %s was allocated next to partition %s", r.Device, part.Device)
	}

	// The plugin: a share prepared, then a partition of the same GPU; and the other way round.
	share := utiltesting.MakeResourceClaim("share", "default").UID("uid-share").Device("gpu", testDriver, testNode, "gpu-0").Share("s-1", nil).Obj()
	partition := utiltesting.MakeResourceClaim("part", "default").UID("uid-part").Device("mig", testDriver, testNode, part.Device).Obj()
	if _, err := prepareOne(t, d, share); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareOne(t, d, partition); err == nil || !strings.Contains(err.Error(), "overlaps gpu-0") {
		t.Errorf("a partition next to a share of its GPU: error = %v", err)
	}
	if res := unprepare(t, d, "uid-share"); res["uid-share"] != nil {
		t.Fatal(res["uid-share"])
	}
	if _, err := prepareOne(t, d, partition); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareOne(t, d, share); err == nil || !strings.Contains(err.Error(), "overlaps "+part.Device) {
		t.Errorf("a share next to a partition of its GPU: error = %v", err)
	}
}

// TestTwoClaimsShareOneGPU: two claims get shares of gpu-0; each is prepared with the GPU's device and its own
// CDI spec, returns its share ID to the kubelet, and the checkpoint and usage ledger record each share with what
// it consumes. The GPU's time slice, which both ask for, stays until the last share goes.
func TestTwoClaimsShareOneGPU(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8", withShares(Shares{Mode: SharesMemory}))
	d := e.mustDriver()
	a := utiltesting.MakeResourceClaim("a", "team-a").UID("uid-a").Request("gpu", "gpu.nvidia.com").
		Device("gpu", testDriver, testNode, "gpu-0").Share("share-a", map[string]string{"memory": "30Gi"}).
		Config(resourceapi.AllocationConfigSourceClaim, testDriver, tsLong).Obj()
	b := utiltesting.MakeResourceClaim("b", "team-b").UID("uid-b").Request("gpu", "gpu.nvidia.com").
		Device("gpu", testDriver, testNode, "gpu-0").Share("share-b", map[string]string{"memory": "10Gi"}).
		Config(resourceapi.AllocationConfigSourceClaim, testDriver, tsLong).Obj()
	for _, c := range []*resourceapi.ResourceClaim{a, b} {
		res, err := d.PrepareResourceClaims(testContext(t), []*resourceapi.ResourceClaim{c})
		if err != nil {
			t.Fatal(err)
		}
		r := res[c.UID]
		if r.Err != nil {
			t.Fatalf("prepare %s: %v", c.Name, r.Err)
		}
		if len(r.Devices) != 1 || ptr.Deref(r.Devices[0].ShareID, "") != *c.Status.Allocation.Devices.Results[0].ShareID {
			t.Fatalf("prepare %s returned %+v, want gpu-0 with its share ID", c.Name, r.Devices)
		}
		view, err := cdi.Resolve(e.cdiRoot, r.Devices[0].CDIDeviceIDs...)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(view.DeviceNodes, "/dev/nvidia0") {
			t.Errorf("%s's container gets %v, want /dev/nvidia0", c.Name, view.DeviceNodes)
		}
	}
	state := loadState(t, e)
	for uid, want := range map[string]struct{ share, memory string }{"uid-a": {"share-a", "30Gi"}, "uid-b": {"share-b", "10Gi"}} {
		dev := state.Claims[uid].Devices[0]
		if dev.ShareID != want.share || dev.ConsumedCapacity["memory"] != want.memory {
			t.Errorf("checkpoint of %s: share %q consuming %v, want %s consuming memory %s", uid, dev.ShareID, dev.ConsumedCapacity, want.share, want.memory)
		}
	}
	_, recs := ledgerIntervals(t, e)
	shares := map[string]string{}
	for _, r := range recs {
		for _, dev := range r.Devices {
			shares[r.ClaimUID] = dev.ShareID + " " + dev.ConsumedCapacity["memory"]
		}
	}
	if diff := cmp.Diff(map[string]string{"uid-a": "share-a 30Gi", "uid-b": "share-b 10Gi"}, shares); diff != "" {
		t.Errorf("usage ledger shares (-want +got):\n%s", diff)
	}
	if slice, _ := e.lib.TimeSlice(0); slice != nvml.TimeSliceLong {
		t.Fatalf("time slice %v after two time-sliced shares, want long", slice)
	}
	if res := unprepare(t, d, "uid-a"); res["uid-a"] != nil {
		t.Fatal(res["uid-a"])
	}
	if slice, _ := e.lib.TimeSlice(0); slice != nvml.TimeSliceLong {
		t.Errorf("time slice %v after the first share went, the second still holds the GPU: want long", slice)
	}
	if res := unprepare(t, d, "uid-b"); res["uid-b"] != nil {
		t.Fatal(res["uid-b"])
	}
	if slice, _ := e.lib.TimeSlice(0); slice != nvml.TimeSliceDefault {
		t.Errorf("time slice %v after the last share went, want the default", slice)
	}
}

// TestOneClaimWithTwoSharesOfOneGPU: the scheduler may give two requests of one claim shares of the same
// device; both are prepared, with one CDI device between them.
func TestOneClaimWithTwoSharesOfOneGPU(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8", withShares(Shares{Mode: SharesUnlimited}))
	d := e.mustDriver()
	c := utiltesting.MakeResourceClaim("two", "default").UID("uid-two").
		Device("a", testDriver, testNode, "gpu-0").Share("s-1", nil).
		Device("b", testDriver, testNode, "gpu-0").Share("s-2", nil).Obj()
	res, err := d.PrepareResourceClaims(testContext(t), []*resourceapi.ResourceClaim{c})
	if err != nil {
		t.Fatal(err)
	}
	r := res[c.UID]
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	var got []string
	for _, dev := range r.Devices {
		got = append(got, fmt.Sprintf("%v %s %s %v", dev.Requests, dev.DeviceName, ptr.Deref(dev.ShareID, ""), dev.CDIDeviceIDs))
	}
	id := "k8s.gpu.nvidia.com/claim=uid-two-gpu-0"
	want := []string{"[a] gpu-0 s-1 [" + id + "]", "[b] gpu-0 s-2 [" + id + "]"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
}

func TestSharesRefused(t *testing.T) {
	whole := func() *utiltesting.ResourceClaimWrapper {
		return utiltesting.MakeResourceClaim("whole", "default").UID("uid-whole").Device("gpu", testDriver, testNode, "gpu-0")
	}
	share := func(uid, id string) *utiltesting.ResourceClaimWrapper {
		return utiltesting.MakeResourceClaim(uid, "default").UID(types.UID(uid)).Device("gpu", testDriver, testNode, "gpu-0").Share(types.UID(id), nil)
	}
	cases := map[string]struct {
		shares  Shares
		held    *resourceapi.ResourceClaim
		claim   *resourceapi.ResourceClaim
		wantErr string
	}{
		"a share on a node that publishes none (the setting changed since the allocation)": {
			shares: Shares{Mode: SharesDisabled}, claim: share("uid-s", "s-1").Obj(),
			wantErr: "device gpu-0 is allocated as share s-1, but this node publishes no consumable shares",
		},
		"a share of a device a claim holds whole": {
			shares: Shares{Mode: SharesUnlimited}, held: whole().Obj(), claim: share("uid-s", "s-1").Obj(),
			wantErr: "device gpu-0 is already prepared for claim uid-whole",
		},
		"the whole device while a share holds it": {
			shares: Shares{Mode: SharesUnlimited}, held: share("uid-s", "s-1").Obj(), claim: whole().Obj(),
			wantErr: "device gpu-0 is already prepared for claim uid-s",
		},
		"MPS for a share, as NVIDIA refuses it": {
			shares: Shares{Mode: SharesUnlimited}, claim: share("uid-s", "s-1").Config(resourceapi.AllocationConfigSourceClaim, testDriver, mpsConfig).Obj(),
			wantErr: "sharing.strategy MPS cannot be combined with consumable shares (--consumable-shares unlimited)",
		},
		"a time slice other than the one another share of the device set": {
			shares:  Shares{Mode: SharesUnlimited},
			held:    share("uid-s", "s-1").Config(resourceapi.AllocationConfigSourceClaim, testDriver, tsLong).Obj(),
			claim:   share("uid-t", "s-2").Obj(),
			wantErr: "the share's sharing config (none) conflicts with share s-1 of claim uid-s (TimeSlicing/Long)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newTestNodeEnv(t, "hgx-h100-8", withShares(tc.shares))
			d := e.mustDriver()
			if tc.held != nil {
				if _, err := prepareOne(t, d, tc.held); err != nil {
					t.Fatal(err)
				}
			}
			before := specFiles(t, e)
			if _, err := prepareOne(t, d, tc.claim); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
			if _, ok := loadState(t, e).Claims[string(tc.claim.UID)]; ok {
				t.Error("the refused claim is recorded")
			}
			if diff := cmp.Diff(before, specFiles(t, e)); diff != "" {
				t.Errorf("the refusal changed the CDI specs (-before +after):\n%s", diff)
			}
		})
	}
}

// TestACrashedShareLeavesTheOtherSharesTimeSlice: a plugin killed while it applied a second share's time slice
// restarts with that share recorded as started; the kubelet's unprepare of it (its pod went away) rolls it back,
// but the first share still holds the GPU, so its time slice stays.
func TestACrashedShareLeavesTheOtherSharesTimeSlice(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8", withShares(Shares{Mode: SharesUnlimited}))
	d := e.mustDriver()
	a := utiltesting.MakeResourceClaim("a", "default").UID("uid-a").Device("gpu", testDriver, testNode, "gpu-0").Share("s-a", nil).
		Config(resourceapi.AllocationConfigSourceClaim, testDriver, tsLong).Obj()
	b := utiltesting.MakeResourceClaim("b", "default").UID("uid-b").Device("gpu", testDriver, testNode, "gpu-0").Share("s-b", nil).
		Config(resourceapi.AllocationConfigSourceClaim, testDriver, tsLong).Obj()
	if _, err := prepareOne(t, d, a); err != nil {
		t.Fatal(err)
	}
	d.state.crash = func(p string) bool { return p == "sharing-applied" }
	func() {
		defer func() {
			if r := recover(); r != draplugin.ErrSimulatedCrash { //nolint:errorlint // recover returns the panic value itself
				t.Fatalf("prepare did not reach the crash point (recovered %v)", r)
			}
		}()
		_, _ = d.PrepareResourceClaims(testContext(t), []*resourceapi.ResourceClaim{b})
	}()
	d2 := e.mustDriver()
	if res := unprepare(t, d2, "uid-b"); res["uid-b"] != nil {
		t.Fatal(res["uid-b"])
	}
	if slice, _ := e.lib.TimeSlice(0); slice != nvml.TimeSliceLong {
		t.Errorf("time slice %v after the interrupted share was rolled back, the first share holds the GPU: want long", slice)
	}
	if _, err := prepareOne(t, d2, a); err != nil {
		t.Errorf("the first share after the restart: %v", err)
	}
}
