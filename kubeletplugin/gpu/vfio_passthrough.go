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

	"k8s.io/klog/v2"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
)

// vfioRecord is what the checkpoint keeps of a vfio device: the PCI function
// prepare moves to vfio-pci and unprepare gives back to nvidia.
type vfioRecord struct {
	BusID      string `json:"busID"`
	IOMMUGroup int    `json:"iommuGroup"`
}

// planVfio maps a vfio device name to what prepare must do.
func (s *nodeState) planVfio(name string) (preparedDevice, bool, error) {
	f, ok := findVfio(s.inventory, name)
	if !ok {
		return preparedDevice{}, false, nil
	}
	g, visible, candidate := s.inventory.vfioCandidate(f, s.cfg.PartitionableMIG)
	if !candidate {
		return preparedDevice{}, true, fmt.Errorf("device %s: GPU %s has MIG devices and is not published for passthrough", name, f.BusID)
	}
	if f.IOMMUGroup < 0 {
		return preparedDevice{}, true, fmt.Errorf("device %s: PCI function %s has no IOMMU group: passthrough needs the IOMMU on (kernel parameter intel_iommu=on or amd_iommu=on)", name, f.BusID)
	}
	p := preparedDevice{Name: name, ParentMinor: -1, Data: deviceData{
		Type: deviceTypeVfio, UUID: vfioUUID(f.BusID),
		Vfio: &vfioRecord{BusID: f.BusID, IOMMUGroup: f.IOMMUGroup},
	}}
	if visible {
		p.ParentMinor, p.Data.ParentUUID = g.Minor, g.UUID
	}
	return p, true, nil
}

// physicalGPU is the bus ID of the GPU a device uses ("" if unknown).
func (s *nodeState) physicalGPU(data deviceData) string {
	if data.Vfio != nil {
		return data.Vfio.BusID
	}
	for _, g := range s.inventory.GPUs {
		if g.UUID == data.ParentUUID {
			return g.PCIBusID
		}
	}
	return ""
}

// passthroughConflict reports a device of another claim (or earlier in this
// one) that uses p's GPU the other way: as a vfio device where p is a GPU or
// MIG device, or the reverse. The shared counters keep the scheduler from
// allocating both; this guards against allocations made under other settings.
func (s *nodeState) passthroughConflict(p preparedDevice, claimUID string, pending []preparedDevice) (string, bool) {
	bus := s.physicalGPU(p.Data)
	if bus == "" {
		return "", false
	}
	clash := func(other deviceData) bool {
		return (other.Vfio != nil) != (p.Data.Vfio != nil) && s.physicalGPU(other) == bus
	}
	for uid, cs := range s.ledger.Claims() {
		if uid == claimUID {
			continue
		}
		for _, dev := range cs.Devices {
			if data, err := decodeDeviceData(dev); err == nil && clash(data) {
				return dev.Device, true
			}
		}
	}
	for _, other := range pending {
		if clash(other.Data) {
			return other.Name, true
		}
	}
	return "", false
}

// bindVfio moves the device's GPU from the nvidia driver to vfio-pci and
// waits for its group's /dev/vfio node. Each step is the kernel's: restrict
// the function to vfio-pci (driver_override), unbind it from nvidia, bind it
// to vfio-pci. It starts from wherever an interrupted run stopped (override
// set, or unbound and not bound yet), which the checkpoint cannot tell: the
// claim was recorded before the first step.
func (s *nodeState) bindVfio(ctx context.Context, p preparedDevice) error {
	rec := p.Data.Vfio
	drv, err := s.pci.root.PCIDriver(rec.BusID)
	if err != nil {
		return err
	}
	switch drv {
	case hostroot.VFIOPCIDriver:
	case hostroot.NvidiaPCIDriver, "":
		if err := s.pci.setDriverOverride(rec.BusID, hostroot.VFIOPCIDriver); err != nil {
			return err
		}
		s.crash.At("vfio-override-set")
		if drv == hostroot.NvidiaPCIDriver {
			if err := s.pci.unbind(rec.BusID, hostroot.NvidiaPCIDriver); err != nil {
				return err
			}
			s.crash.At("vfio-unbound")
		}
		if err := s.pci.bind(rec.BusID, hostroot.VFIOPCIDriver); err != nil {
			return err
		}
		klog.FromContext(ctx).V(2).Info("Bound GPU to vfio-pci", "device", p.Name, "pciBusID", rec.BusID, "iommuGroup", rec.IOMMUGroup)
		s.crash.At("vfio-bound")
	default:
		return fmt.Errorf("device %s: PCI function %s is bound to %q; the plugin moves GPUs only between %s and %s", p.Name, rec.BusID, drv, hostroot.NvidiaPCIDriver, hostroot.VFIOPCIDriver)
	}
	return s.pci.waitForPath(ctx, vfioGroupPath(rec.IOMMUGroup))
}

// returnToNvidia gives a GPU back to the nvidia driver: clear the override
// (the kernel refuses any other driver while it names vfio-pci), unbind it
// from vfio-pci, bind it to nvidia. Like bindVfio it starts from wherever an
// interrupted run stopped; a GPU on nvidia without override is done.
func (s *nodeState) returnToNvidia(ctx context.Context, device string, rec vfioRecord) error {
	drv, err := s.pci.root.PCIDriver(rec.BusID)
	if err != nil {
		return err
	}
	override, err := s.pci.driverOverride(rec.BusID)
	if err != nil {
		return err
	}
	if override != "" {
		if err := s.pci.setDriverOverride(rec.BusID, ""); err != nil {
			return err
		}
		s.crash.At("unprepare-vfio-override-cleared")
	}
	switch drv {
	case hostroot.NvidiaPCIDriver:
		return nil
	case hostroot.VFIOPCIDriver:
		if err := s.pci.unbind(rec.BusID, hostroot.VFIOPCIDriver); err != nil {
			return err
		}
		s.crash.At("unprepare-vfio-unbound")
	case "":
	default:
		return fmt.Errorf("device %s: PCI function %s is bound to %q, not %s: left as it is", device, rec.BusID, drv, hostroot.VFIOPCIDriver)
	}
	if err := s.pci.bind(rec.BusID, hostroot.NvidiaPCIDriver); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Returned GPU to the nvidia driver", "device", device, "pciBusID", rec.BusID)
	s.crash.At("unprepare-vfio-rebound")
	return nil
}

func vfioGroupPath(group int) string { return fmt.Sprintf("%s/%d", hostroot.VFIODir, group) }

// vfioNode is the CDI device node of a host character device, with the
// numbers read from the host (the runtime would stat it; the simulator's
// nodes only exist under the fake root).
func (s *nodeState) vfioNode(path string) (*cdispec.DeviceNode, error) {
	major, minor, err := s.pci.root.CharDeviceNumbers(path)
	if err != nil {
		return nil, err
	}
	return charDevice(path, int(major), int(minor)), nil
}

// vfioEdits exposes a vfio device: its group's /dev/vfio node (LegacyOnly),
// or its iommufd cdev when the config prefers iommufd and the host has it.
func (s *nodeState) vfioEdits(p preparedDevice) (cdi.Device, error) {
	cfg, _ := p.config.(*apiv1beta1.VfioDeviceConfig)
	path := vfioGroupPath(p.Data.Vfio.IOMMUGroup)
	if cfg != nil && cfg.PreferIommuFD() && s.pci.iommuFDEnabled() {
		cdev, err := s.pci.vfioCdev(p.Data.Vfio.BusID)
		if err != nil {
			return cdi.Device{}, fmt.Errorf("device %s: %w", p.Name, err)
		}
		path = hostroot.VFIOCdevDir + "/" + cdev
	}
	node, err := s.vfioNode(path)
	if err != nil {
		return cdi.Device{}, fmt.Errorf("device %s: %w", p.Name, err)
	}
	return cdi.Device{Name: p.Name, Edits: cdispec.ContainerEdits{DeviceNodes: []*cdispec.DeviceNode{node}}}, nil
}

// claimCommonEdits are the edits every container of the claim gets: the
// NVIDIA devices and driver files when the claim has a GPU or MIG device, and
// the IOMMU API device (/dev/vfio/vfio, or /dev/iommu with iommufd) when a
// vfio device's config enables it. A claim of vfio devices only gets no
// driver files: the VM's guest driver serves the GPU.
func (s *nodeState) claimCommonEdits(devices []preparedDevice) (cdispec.ContainerEdits, error) {
	nvidia, api, iommufd := false, false, false
	for _, p := range devices {
		if p.Data.Type != deviceTypeVfio {
			nvidia = true
			continue
		}
		if cfg, ok := p.config.(*apiv1beta1.VfioDeviceConfig); ok && cfg.APIDevice() {
			api = true
			iommufd = iommufd || (cfg.PreferIommuFD() && s.pci.iommuFDEnabled())
		}
	}
	edits := cdispec.ContainerEdits{Env: []string{"NVIDIA_VISIBLE_DEVICES=void"}}
	if nvidia {
		edits = commonEdits(s.hostDevices, s.driverFiles)
	}
	if !api {
		return edits, nil
	}
	path := hostroot.VFIOContainerDevice
	if iommufd {
		path = hostroot.IOMMUDevice
	}
	node, err := s.vfioNode(path)
	if err != nil {
		return cdispec.ContainerEdits{}, fmt.Errorf("IOMMU API device: %w", err)
	}
	edits.DeviceNodes = append(edits.DeviceNodes, node)
	return edits, nil
}

// reconcilePassthrough gives back to nvidia every GPU that the plugin moved
// towards vfio-pci (driver_override vfio-pci) and that no recorded claim
// holds: one of a claim whose record a reboot discarded. A GPU an admin bound
// to vfio-pci without the override is left alone. It runs at start, before
// the state is shared, and re-reads the inventory when it moved any.
func (s *nodeState) reconcilePassthrough(ctx context.Context) error {
	if !s.cfg.passthrough() {
		return nil
	}
	held := map[string]bool{}
	for _, cs := range s.ledger.Claims() {
		for _, dev := range cs.Devices {
			if data, err := decodeDeviceData(dev); err == nil && data.Vfio != nil {
				held[data.Vfio.BusID] = true
			}
		}
	}
	moved := false
	for _, f := range s.inventory.PCIGPUs {
		if held[f.BusID] || f.Driver == hostroot.NvidiaPCIDriver {
			continue
		}
		override, err := s.pci.driverOverride(f.BusID)
		if err != nil {
			return err
		}
		if override != hostroot.VFIOPCIDriver {
			continue
		}
		if err := s.returnToNvidia(ctx, f.BusID, vfioRecord{BusID: f.BusID, IOMMUGroup: f.IOMMUGroup}); err != nil {
			return fmt.Errorf("return GPU %s that no claim holds to the nvidia driver: %w", f.BusID, err)
		}
		klog.FromContext(ctx).Info("Returned a GPU no claim holds from vfio-pci to the nvidia driver", "pciBusID", f.BusID)
		moved = true
		s.crash.At("startup-vfio-returned")
	}
	if moved {
		return s.refreshInventory(ctx)
	}
	return nil
}

// hasVfio tells whether a claim record holds a vfio device.
func hasVfio(cs checkpoint.ClaimState) bool {
	for _, dev := range cs.Devices {
		if data, err := decodeDeviceData(dev); err == nil && data.Vfio != nil {
			return true
		}
	}
	return false
}
