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

// Package fabricmanager is the seam to NVIDIA Fabric Manager in shared
// NVSwitch mode (FABRIC_MODE=1) on HGX nodes: the partitions it can connect
// through the NVSwitches, and their activation. The kubelet plugin publishes
// partition membership as device attributes and activates a claim's
// partition while the claim is prepared. Mock serves a profile's partition
// table for the simulator and tests; no client of the real Fabric Manager
// (libnvfm) is built in.
package fabricmanager

import (
	"errors"
	"fmt"
)

// Interface is the part of Fabric Manager's partition API the plugin uses.
type Interface interface {
	// Partitions lists the supported partitions with their state.
	Partitions() ([]Partition, error)
	// Activate activates a partition; an active partition is not an error.
	// It fails with Fabric Manager's reason (an unknown ID, a partition
	// that shares GPUs with an active one).
	Activate(id int) error
	// Deactivate deactivates a partition; an inactive one is not an error.
	Deactivate(id int) error
}

// Partition is one partition of Fabric Manager's table.
type Partition struct {
	ID     int
	Active bool
	GPUs   []GPU
}

// GPU is a partition member as Fabric Manager reports it.
type GPU struct {
	// PhysicalID is the GPU's module ID (1..8 on an 8-GPU HGX).
	PhysicalID int
	// PCIBusID is the sysfs form ("0000:1b:00.0").
	PCIBusID string
}

// ErrFabricManager wraps the errors Fabric Manager returns.
var ErrFabricManager = errors.New("fabric manager")

// Membership is, for one GPU, the ID of the partition of each size that
// contains it (partition<N> attributes), and its module ID.
type Membership struct {
	ModuleID int
	// BySize maps a partition size to the partition's ID.
	BySize map[int]int
}

// Memberships maps every GPU (PCI bus ID) of the table to its partitions.
// Where a GPU is in several partitions of one size (a table this package
// does not expect), the lowest ID wins.
func Memberships(parts []Partition) map[string]Membership {
	out := map[string]Membership{}
	for _, p := range parts {
		for _, g := range p.GPUs {
			m, ok := out[g.PCIBusID]
			if !ok {
				m = Membership{ModuleID: g.PhysicalID, BySize: map[int]int{}}
			}
			if id, ok := m.BySize[len(p.GPUs)]; !ok || p.ID < id {
				m.BySize[len(p.GPUs)] = p.ID
			}
			out[g.PCIBusID] = m
		}
	}
	return out
}

// Match returns the partition whose GPUs are exactly busIDs (a set).
func Match(parts []Partition, busIDs []string) (Partition, error) {
	want := map[string]bool{}
	for _, b := range busIDs {
		want[b] = true
	}
	for _, p := range parts {
		if len(p.GPUs) != len(want) {
			continue
		}
		all := true
		for _, g := range p.GPUs {
			all = all && want[g.PCIBusID]
		}
		if all {
			return p, nil
		}
	}
	return Partition{}, fmt.Errorf("the claim's GPUs %v do not match any Fabric Manager partition: a claim of N GPUs on a Fabric Manager node must hold exactly one partition of N GPUs (ask for them with matchAttribute: gpu.nvidia.com/partition%d)", busIDs, len(want))
}
