package mock

import (
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
