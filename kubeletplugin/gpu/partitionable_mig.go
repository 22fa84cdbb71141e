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

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// engineValues are the engine counters a MIG profile takes from its GPU
// (besides one counter per memory slice). Counter names must be DNS labels
// (the API server refuses a ResourceSlice otherwise), so they are the
// capacities' names in lowercase with dashes (copyEngines: copy-engines).
func engineValues(c MigCapacities) map[string]int {
	return map[string]int{
		"multiprocessors": c.Multiprocessors,
		"copy-engines":    c.CopyEngines,
		"decoders":        c.Decoders,
		"encoders":        c.Encoders,
		"jpeg-engines":    c.JpegEngines,
		"ofa-engines":     c.OfaEngines,
	}
}

func counter(n int) resourceapi.Counter {
	return resourceapi.Counter{Value: *resource.NewQuantity(int64(n), resource.DecimalSI)}
}

// isPartitionable tells whether a GPU is published as shared counters plus
// every MIG profile/placement (KEP-4815) in partitionable mode.
func isPartitionable(g GPU) bool {
	return g.MIGEnabled && len(g.MigProfiles) > 0 && g.MemorySlices() > 0
}

// gpuTotals is the capacity of the whole GPU in counter terms: one unit per
// memory slice, and for every engine the count of the largest profile (the
// full-GPU profile holds all engines).
func gpuTotals(g GPU) map[string]int {
	totals := map[string]int{}
	for i := range g.MemorySlices() {
		totals[memorySliceCounter(i)] = 1
	}
	for _, p := range g.MigProfiles {
		for name, v := range engineValues(p.Capacities) {
			totals[name] = max(totals[name], v)
		}
	}
	return totals
}

// counterSet is the GPU's shared counters.
func counterSet(g GPU) resourceapi.CounterSet {
	counters := map[string]resourceapi.Counter{}
	for name, v := range gpuTotals(g) {
		if v > 0 { // an engine the GPU does not have needs no counter
			counters[name] = counter(v)
		}
	}
	return resourceapi.CounterSet{Name: counterSetName(g.Minor), Counters: counters}
}

// placementConsumption is what one profile at one placement takes from the
// GPU's counters: its memory slices and its engines (zero counts omitted).
func placementConsumption(g GPU, p MigProfile, pl MigPlacement) resourceapi.DeviceCounterConsumption {
	counters := map[string]resourceapi.Counter{}
	for i := pl.Start; i < pl.Start+pl.Size; i++ {
		counters[memorySliceCounter(i)] = counter(1)
	}
	for name, v := range engineValues(p.Capacities) {
		if v > 0 {
			counters[name] = counter(v)
		}
	}
	return resourceapi.DeviceCounterConsumption{CounterSet: counterSetName(g.Minor), Counters: counters}
}

// partitionDevices lists the full GPU (consuming every counter) and one device
// per profile and placement.
func partitionDevices(inv Inventory, g GPU) []resourceapi.Device {
	full := gpuDevice(inv, g)
	full.ConsumesCounters = fullConsumption(g)
	devices := []resourceapi.Device{full}
	profiles := slices.Clone(g.MigProfiles)
	// Smallest profiles first: the allocator is first-fit, so small requests
	// are packed before they fragment the GPU.
	slices.SortStableFunc(profiles, func(a, b MigProfile) int {
		if a.Capacities.MemoryBytes != b.Capacities.MemoryBytes {
			if a.Capacities.MemoryBytes < b.Capacities.MemoryBytes {
				return -1
			}
			return 1
		}
		return a.GIProfileID - b.GIProfileID
	})
	for _, p := range profiles {
		for _, pl := range p.Placements {
			d := migDevice(inv, g, p.Name, p.GIProfileID, pl, p.Capacities, "")
			d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{placementConsumption(g, p, pl)}
			devices = append(devices, d)
		}
	}
	return devices
}

// findPartition maps a partitionable device name back to its GPU, profile and
// placement.
func findPartition(inv Inventory, name string) (GPU, MigProfile, MigPlacement, bool) {
	for _, g := range inv.GPUs {
		if !isPartitionable(g) {
			continue
		}
		for _, p := range g.MigProfiles {
			for _, pl := range p.Placements {
				if migDeviceName(g.Minor, p.Name, p.GIProfileID, pl.Start) == name {
					return g, p, pl, true
				}
			}
		}
	}
	return GPU{}, MigProfile{}, MigPlacement{}, false
}
