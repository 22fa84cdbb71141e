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
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/dynamic-resource-allocation/deviceattribute"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
)

const (
	testClusterUUID = "4f9a7c2e-1b3d-4e5f-8a6b-7c8d9e0f1a2b"
	testClique      = uint32(7)
)

func withFabric() envOption {
	return func(c *mock.Config, _ *testNodeEnv) {
		c.ClusterUUID = testClusterUUID
		c.CliqueID = ptr.To(testClique)
	}
}

func allDevices(res resourceslice.DriverResources) []resourceapi.Device {
	var out []resourceapi.Device
	for _, pool := range res.Pools {
		for _, s := range pool.Slices {
			out = append(out, s.Devices...)
		}
	}
	return out
}

func strAttr(d resourceapi.Device, name resourceapi.QualifiedName) (string, bool) {
	a, ok := d.Attributes[name]
	if !ok || a.StringValue == nil {
		return "", false
	}
	return *a.StringValue, true
}

func TestPublishedDevices(t *testing.T) {
	cases := map[string]struct {
		profile string
		opts    []envOption
		check   func(t *testing.T, devices []resourceapi.Device)
		// wantCount is the number of devices the node publishes.
		wantCount int
		// sysfs links every GPU under a PCIe root in the host root.
		sysfs bool
	}{
		"every GB200 GPU carries the node's clique": {
			profile: "gb200-nvl72", opts: []envOption{withFabric()}, wantCount: 4,
			check: func(t *testing.T, devices []resourceapi.Device) {
				want := fmt.Sprintf("%s.%d", testClusterUUID, testClique)
				for _, d := range devices {
					if got, _ := strAttr(d, attrCliqueID); got != want {
						t.Errorf("%s: cliqueID = %q, want %q", d.Name, got, want)
					}
					if got, _ := strAttr(d, attrType); got != "gpu" {
						t.Errorf("%s: type = %q, want gpu", d.Name, got)
					}
					if got, _ := strAttr(d, attrArchitecture); got != "Blackwell" {
						t.Errorf("%s: architecture = %q", d.Name, got)
					}
				}
			},
		},
		"a node without multi-node NVLink has no cliqueID": {
			profile: "hgx-h100-8", wantCount: 8, sysfs: true,
			check: func(t *testing.T, devices []resourceapi.Device) {
				for _, d := range devices {
					if v, ok := d.Attributes[attrCliqueID]; ok {
						t.Errorf("%s: unexpected cliqueID %v", d.Name, v)
					}
					if _, ok := d.Attributes[deviceattribute.StandardDeviceAttributePCIBusID]; !ok {
						t.Errorf("%s: no pciBusID", d.Name)
					}
					if root, _ := strAttr(d, deviceattribute.StandardDeviceAttributePCIeRoot); !strings.HasPrefix(root, "pci000") {
						t.Errorf("%s: pcieRoot = %q", d.Name, root)
					}
					if _, ok := d.Attributes[deviceattribute.StandardDeviceAttributeNUMANode]; !ok {
						t.Errorf("%s: no numaNode", d.Name)
					}
					if v := d.Attributes[attrDriverVersion].VersionValue; v == nil || *v != "580.95.5" {
						t.Errorf("%s: driverVersion = %v, want 580.95.5", d.Name, v)
					}
				}
			},
		},
		"A100 static MIG publishes MIG devices with parent and profile, not the GPUs": {
			profile: "a100-40gb-mig",
			check: func(t *testing.T, devices []resourceapi.Device) {
				if len(devices) == 0 {
					t.Fatal("no devices")
				}
				for _, d := range devices {
					if got, _ := strAttr(d, attrType); got != "mig" {
						t.Errorf("%s: type = %q, want mig", d.Name, got)
					}
					parent, ok := strAttr(d, attrParentUUID)
					if !ok || !strings.HasPrefix(parent, "GPU-") {
						t.Errorf("%s: parentUUID = %q", d.Name, parent)
					}
					profile, ok := strAttr(d, attrProfile)
					if !ok || !strings.Contains(d.Name, "-mig-"+strings.NewReplacer(".", "", "+", "-").Replace(profile)+"-") {
						t.Errorf("%s: profile = %q does not match the name", d.Name, profile)
					}
					if uuid, _ := strAttr(d, attrUUID); !strings.HasPrefix(uuid, "MIG-") {
						t.Errorf("%s: uuid = %q", d.Name, uuid)
					}
					for _, c := range []resourceapi.QualifiedName{capMultiprocessors, capCopyEngines, capDecoders, capEncoders, capJpegEngines, capOfaEngines, capMemory} {
						if _, ok := d.Capacity[c]; !ok {
							t.Errorf("%s: no capacity %s", d.Name, c)
						}
					}
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			env := newTestNodeEnv(t, tc.profile, tc.opts...)
			if tc.sysfs {
				links := map[string]string{}
				for i, id := range env.lib.Profile().GPU.PCIBusIDs {
					links[strings.ToLower(id)] = fmt.Sprintf("pci0000:%02x", i/4)
				}
				writeSysfsPCI(t, env.hostRoot, links)
			}
			d := env.mustDriver()
			devices := allDevices(d.Resources())
			if tc.wantCount > 0 && len(devices) != tc.wantCount {
				t.Errorf("%d devices, want %d", len(devices), tc.wantCount)
			}
			tc.check(t, devices)
			for _, dev := range devices {
				if n := len(dev.Attributes) + len(dev.Capacity); n > resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
					t.Errorf("%s: %d attributes and capacities, limit %d", dev.Name, n, resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice)
				}
			}
		})
	}
}

func TestPartitionableMIGPool(t *testing.T) {
	d := newTestNodeEnv(t, "a100-40gb-mig", withDynamicMIG()).mustDriver()
	pool := d.Resources().Pools[testNode]
	if len(pool.Slices) < 2 {
		t.Fatalf("%d slices, want counters and devices in separate slices", len(pool.Slices))
	}
	counterSets := map[string]resourceapi.CounterSet{}
	var devices []resourceapi.Device
	for i, s := range pool.Slices {
		if len(s.SharedCounters) > 0 && len(s.Devices) > 0 {
			t.Errorf("slice %d has both counters and devices", i)
		}
		if len(s.SharedCounters) > resourceapi.ResourceSliceMaxCounterSets {
			t.Errorf("slice %d: %d counter sets", i, len(s.SharedCounters))
		}
		if len(s.Devices) > resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures {
			t.Errorf("slice %d: %d devices with counters, limit %d", i, len(s.Devices), resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures)
		}
		for _, cs := range s.SharedCounters {
			counterSets[cs.Name] = cs
			// The API server's validation of ResourceSlices: counter set and counter names are DNS labels.
			for _, name := range append([]string{cs.Name}, slices.Collect(maps.Keys(cs.Counters))...) {
				if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
					t.Errorf("slice %d: counter name %q: %v", i, name, errs)
				}
			}
		}
		devices = append(devices, s.Devices...)
	}
	if len(counterSets) != 8 {
		t.Errorf("%d counter sets, want one per GPU (8)", len(counterSets))
	}
	// Per GPU: the full GPU plus every profile placement of the a100 table.
	var placements int
	for _, p := range d.Inventory().GPUs[0].MigProfiles {
		placements += len(p.Placements)
	}
	if want := 8 * (1 + placements); len(devices) != want {
		t.Errorf("%d devices, want %d", len(devices), want)
	}
	for _, dev := range devices {
		if len(dev.ConsumesCounters) != 1 {
			t.Fatalf("%s consumes %d counter sets, want 1", dev.Name, len(dev.ConsumesCounters))
		}
		cs, ok := counterSets[dev.ConsumesCounters[0].CounterSet]
		if !ok {
			t.Fatalf("%s consumes unknown counter set %q", dev.Name, dev.ConsumesCounters[0].CounterSet)
		}
		for name, c := range dev.ConsumesCounters[0].Counters {
			total, ok := cs.Counters[name]
			if !ok || c.Value.Cmp(total.Value) > 0 {
				t.Errorf("%s consumes %s=%s of %v", dev.Name, name, c.Value.String(), total.Value.String())
			}
		}
		typ, _ := strAttr(dev, attrType)
		if typ == "gpu" && len(dev.ConsumesCounters[0].Counters) != len(cs.Counters) {
			t.Errorf("full GPU %s consumes %d of %d counters, want all", dev.Name, len(dev.ConsumesCounters[0].Counters), len(cs.Counters))
		}
		if typ == "mig" {
			if _, ok := strAttr(dev, attrParentUUID); !ok {
				t.Errorf("%s: no parentUUID", dev.Name)
			}
			if _, ok := dev.Attributes[attrUUID]; ok {
				t.Errorf("%s: a possible partition has no MIG UUID yet", dev.Name)
			}
		}
	}
}

func plainDevices(n int) []resourceapi.Device {
	out := make([]resourceapi.Device, n)
	for i := range out {
		out[i] = resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i)}
	}
	return out
}

func TestSplitDevices(t *testing.T) {
	tainted := plainDevices(130)
	tainted[100].Taints = []resourceapi.DeviceTaint{{Key: "k", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
	cases := map[string]struct {
		devices []resourceapi.Device
		want    []int
	}{
		"128 plain devices fit one slice":   {devices: plainDevices(128), want: []int{128}},
		"129 plain devices need two slices": {devices: plainDevices(129), want: []int{128, 1}},
		// Devices 0..99 are plain and share a slice; device 100 is tainted,
		// so a slice holding it may only have 64: it starts a new one.
		"a tainted device starts a slice of at most 64": {devices: tainted, want: []int{100, 30}},
		"no devices, no slices":                         {devices: nil, want: nil},
		"exactly 64 tainted devices fit one slice": {devices: func() []resourceapi.Device {
			d := plainDevices(64)
			for i := range d {
				d[i].Taints = []resourceapi.DeviceTaint{{Key: "k", Effect: resourceapi.DeviceTaintEffectNone}}
			}
			return d
		}(), want: []int{64}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []int
			for _, s := range splitDevices(tc.devices) {
				got = append(got, len(s))
				limit := resourceapi.ResourceSliceMaxDevices
				for _, d := range s {
					if usesAdvancedFeatures(d) {
						limit = resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures
					}
				}
				if len(s) > limit {
					t.Errorf("slice of %d devices exceeds its limit %d", len(s), limit)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("slice sizes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPublishedDeviceNamesMatchDevices(t *testing.T) {
	for _, tc := range []struct {
		profile string
		opts    []envOption
	}{{"hgx-h100-8", nil}, {"a100-40gb-mig", nil}, {"a100-40gb-mig", []envOption{withDynamicMIG()}}} {
		d := newTestNodeEnv(t, tc.profile, tc.opts...).mustDriver()
		var want []string
		for _, dev := range allDevices(d.Resources()) {
			want = append(want, dev.Name)
		}
		got := publishedDeviceNames(d.Inventory(), d.cfg.PartitionableMIG, d.cfg.passthrough())
		slices.Sort(want)
		slices.Sort(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s partitionable=%v: names (-devices +names):\n%s", tc.profile, d.cfg.PartitionableMIG, diff)
		}
	}
}

// withMIGOnAFabric gives the A100 MIG profile a multi-node NVLink fabric, so
// MIG devices on a clique can be checked (no shipped profile has both).
func withMIGOnAFabric(t *testing.T) envOption {
	return func(c *mock.Config, _ *testNodeEnv) {
		p, err := mock.LoadProfile(c.Profile)
		if err != nil {
			t.Fatal(err)
		}
		p.Fabric = &mock.FabricSpec{MultiNode: true, CliqueID: testClique, NodesPerRack: 18}
		c.ProfileSpec = p
		c.ClusterUUID = testClusterUUID
	}
}

func TestMIGDevicesCarryTheClique(t *testing.T) {
	want := fmt.Sprintf("%s.%d", testClusterUUID, testClique)
	for name, opts := range map[string][]envOption{
		"static MIG":        {withMIGOnAFabric(t)},
		"partitionable MIG": {withMIGOnAFabric(t), withDynamicMIG()},
	} {
		t.Run(name, func(t *testing.T) {
			d := newTestNodeEnv(t, "a100-40gb-mig", opts...).mustDriver()
			devices := allDevices(d.Resources())
			if len(devices) == 0 {
				t.Fatal("no devices")
			}
			for _, dev := range devices {
				if got, _ := strAttr(dev, attrCliqueID); got != want {
					t.Errorf("%s: cliqueID = %q, want %q", dev.Name, got, want)
				}
			}
		})
	}
}
