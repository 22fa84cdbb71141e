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
	"github.com/computedomain-operator/computedomain-operator/internal/fabricmanager"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
)

// FakeHostRootSpec returns the fake host root that matches a node of this
// profile: its GPUs' /dev entries and sysfs PCI devices, and its driver
// version. The caller adds IMEX channels and a boot ID as needed.
func (p *Profile) FakeHostRootSpec(nodeName string) hostroot.FakeSpec {
	return hostroot.FakeSpec{
		NodeName:      nodeName,
		GPUs:          p.GPUCount,
		DriverVersion: p.DriverVersion,
		PCIBusIDs:     append([]string(nil), p.GPU.PCIBusIDs...),
		PCIDeviceID:   p.GPU.PCIDeviceID,
		NUMANodes:     append([]int(nil), p.GPU.NUMANodes...),
	}
}

// HostRootPCIDriver returns a Config.PCIDriver that reads the driver of a
// GPU's PCI function from a fake host root's sysfs (hostroot.Root.PCIDriver,
// which its FakeKernel changes). A GPU whose function the root does not
// have counts as bound to nvidia.
func HostRootPCIDriver(root hostroot.Root) func(busID string) string {
	return func(busID string) string {
		drv, err := root.PCIDriver(busID)
		if err != nil {
			return hostroot.NvidiaPCIDriver
		}
		return drv
	}
}

// HostRootMIGHook returns a Config.MIGDeviceHook that mirrors MIG devices
// into a fake host root, as the driver creates and removes the capability
// files of MIG devices (hostroot.Root.AddMIGDevice / RemoveMIGDevice).
func HostRootMIGHook(root hostroot.Root) func(gpuMinor, gi, ci int, created bool) error {
	return func(gpuMinor, gi, ci int, created bool) error {
		if created {
			return root.AddMIGDevice(gpuMinor, gi, ci)
		}
		return root.RemoveMIGDevice(gpuMinor, gi, ci)
	}
}

// FabricManagerStateFile is the host path, under a fake host root, where the
// mock Fabric Manager keeps its active partitions, as Fabric Manager keeps
// them across plugin restarts.
const FabricManagerStateFile = "/var/run/nvidia-fabricmanager/mock-partitions.json"

// FabricManager returns the mock Fabric Manager of a profile's partition table
// (fabric.partitions), keeping its state in stateFile ("" in memory); nil
// when the profile has no partitions (no Fabric Manager in shared NVSwitch
// mode).
func (p *Profile) FabricManager(stateFile string) (*fabricmanager.Mock, error) {
	if p.Fabric == nil || len(p.Fabric.Partitions) == 0 {
		return nil, nil
	}
	table := make([]fabricmanager.MockPartition, 0, len(p.Fabric.Partitions))
	for _, part := range p.Fabric.Partitions {
		table = append(table, fabricmanager.MockPartition{ID: part.ID, GPUs: append([]int(nil), part.GPUs...)})
	}
	return fabricmanager.NewMock(table, p.GPU.PCIBusIDs, stateFile)
}
