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

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"
)

// PublishOptions select what the pool contains.
type PublishOptions struct {
	// PoolName is the node's pool (the node name).
	PoolName string
	// PartitionableMIG publishes MIG-enabled GPUs as shared counters plus
	// every profile/placement instead of their current MIG devices.
	PartitionableMIG bool
	// Taints per device name (health).
	Taints map[string][]resourceapi.DeviceTaint
	// Passthrough publishes every GPU's PCI function as a vfio device
	// (passthrough.go), sharing counters with the GPU's other devices.
	Passthrough bool
	// Shares publishes full GPUs and static MIG devices for several claims
	// at once (consumable_shares.go). Partitionable MIG devices stay
	// exclusive: their instance exists for one claim; a shared full GPU
	// consumes the GPU's counters once, so no partition is allocated while a
	// share holds it, and no share while a partition does.
	Shares Shares
}

// poolDevices lists the node's devices and shared counter sets.
func poolDevices(inv Inventory, opts PublishOptions) ([]resourceapi.Device, []resourceapi.CounterSet) {
	var devices []resourceapi.Device
	var counters []resourceapi.CounterSet
	for _, g := range inv.GPUs {
		switch {
		case opts.PartitionableMIG && isPartitionable(g):
			counters = append(counters, counterSet(g))
			parts := partitionDevices(inv, g)
			opts.Shares.shareable(&parts[0]) // the full GPU
			devices = append(devices, parts...)
		case g.MIGEnabled:
			// A MIG-enabled GPU publishes its MIG devices, not itself.
			for _, m := range g.MigDevices {
				dev := migDevice(inv, g, m.Profile, m.GIProfileID, m.Placement, m.Capacities, m.UUID)
				opts.Shares.shareable(&dev)
				devices = append(devices, dev)
			}
		default:
			dev := gpuDevice(inv, g)
			if opts.Passthrough && inv.pciIndex(g.PCIBusID) >= 0 {
				counters = append(counters, passthroughCounterSet(g))
				dev.ConsumesCounters = passthroughConsumption(g)
			}
			opts.Shares.shareable(&dev)
			devices = append(devices, dev)
		}
	}
	if opts.Passthrough {
		for i, f := range inv.PCIGPUs {
			g, visible, ok := inv.vfioCandidate(f, opts.PartitionableMIG)
			if !ok {
				continue
			}
			dev := vfioDevice(inv, i, f)
			switch {
			case !visible:
				// Bound to vfio-pci (or to no driver): nothing else of the
				// GPU is published.
			case opts.PartitionableMIG && isPartitionable(g):
				dev.ConsumesCounters = fullConsumption(g)
			case !g.MIGEnabled:
				dev.ConsumesCounters = passthroughConsumption(g)
			}
			devices = append(devices, dev)
		}
	}
	for i := range devices {
		if t := opts.Taints[devices[i].Name]; len(t) > 0 {
			devices[i].Taints = t
		}
	}
	return devices, counters
}

// publishedDeviceNames lists the names poolDevices publishes, without
// building the devices (the hot path of prepare metrics).
func publishedDeviceNames(inv Inventory, partitionableMIG, passthrough bool) []string {
	var names []string
	for _, g := range inv.GPUs {
		switch {
		case partitionableMIG && isPartitionable(g):
			names = append(names, gpuDeviceName(g.Minor))
			for _, p := range g.MigProfiles {
				for _, pl := range p.Placements {
					names = append(names, migDeviceName(g.Minor, p.Name, p.GIProfileID, pl.Start))
				}
			}
		case g.MIGEnabled:
			for _, m := range g.MigDevices {
				names = append(names, migDeviceName(g.Minor, m.Profile, m.GIProfileID, m.Placement.Start))
			}
		default:
			names = append(names, gpuDeviceName(g.Minor))
		}
	}
	if passthrough {
		for i, f := range inv.PCIGPUs {
			if _, _, ok := inv.vfioCandidate(f, partitionableMIG); ok {
				names = append(names, vfioDeviceName(i))
			}
		}
	}
	return names
}

// usesAdvancedFeatures is true for a device that lowers the per-slice limit to
// ResourceSliceMaxDevicesWithAdvancedFeatures.
func usesAdvancedFeatures(d resourceapi.Device) bool {
	return len(d.Taints) > 0 || len(d.ConsumesCounters) > 0
}

// splitDevices cuts devices into slices that respect the per-slice limits: 128
// devices, or 64 once any device in the slice has taints or consumes counters.
func splitDevices(devices []resourceapi.Device) [][]resourceapi.Device {
	var out [][]resourceapi.Device
	var cur []resourceapi.Device
	advanced := false
	for _, d := range devices {
		limit := resourceapi.ResourceSliceMaxDevices
		if advanced || usesAdvancedFeatures(d) {
			limit = resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures
		}
		if len(cur) >= limit {
			out = append(out, cur)
			cur, advanced = nil, false
		}
		cur = append(cur, d)
		advanced = advanced || usesAdvancedFeatures(d)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// BuildResources is the complete pool this node publishes: counter sets in
// their own slices (at most 8 per slice; a slice has either counters or
// devices), then device slices. A node without devices still publishes one
// empty slice so the pool shows the driver is running.
func BuildResources(inv Inventory, opts PublishOptions) resourceslice.DriverResources {
	devices, counters := poolDevices(inv, opts)
	var slices []resourceslice.Slice
	for start := 0; start < len(counters); start += resourceapi.ResourceSliceMaxCounterSets {
		end := min(start+resourceapi.ResourceSliceMaxCounterSets, len(counters))
		slices = append(slices, resourceslice.Slice{SharedCounters: counters[start:end]})
	}
	for _, chunk := range splitDevices(devices) {
		slices = append(slices, resourceslice.Slice{Devices: chunk})
	}
	if len(slices) == 0 {
		slices = []resourceslice.Slice{{}}
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{opts.PoolName: {Slices: slices}}}
}

// ResourceSlices renders the pool as the ResourceSlice objects the slice
// controller would write for this node (names are indicative: the controller
// picks its own), for the inspect command and allocator checks.
func ResourceSlices(driverName, nodeName string, res resourceslice.DriverResources) []*resourceapi.ResourceSlice {
	var out []*resourceapi.ResourceSlice
	for _, poolName := range sortedNames(res.Pools) {
		pool := res.Pools[poolName]
		for i, s := range pool.Slices {
			slice := &resourceapi.ResourceSlice{
				Spec: resourceapi.ResourceSliceSpec{
					Driver:         driverName,
					Pool:           resourceapi.ResourcePool{Name: poolName, Generation: pool.Generation, ResourceSliceCount: int64(len(pool.Slices))},
					Devices:        s.Devices,
					SharedCounters: s.SharedCounters,
				},
			}
			slice.APIVersion, slice.Kind = "resource.k8s.io/v1", "ResourceSlice"
			slice.Name = fmt.Sprintf("%x-%s-%s", i, driverName, nodeName)
			if s.PerDeviceNodeSelection == nil {
				n := nodeName
				slice.Spec.NodeName = &n
			} else {
				slice.Spec.PerDeviceNodeSelection = s.PerDeviceNodeSelection
			}
			out = append(out, slice)
		}
	}
	return out
}
