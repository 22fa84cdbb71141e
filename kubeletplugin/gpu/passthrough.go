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
	"strconv"
	"strings"

	"github.com/google/uuid"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/deviceattribute"
	"k8s.io/utils/ptr"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// Passthrough (PassthroughSupport): every NVIDIA GPU's PCI function is also
// published as a vfio device, gpu-vfio-<index> (its place among the node's
// NVIDIA GPU functions by bus ID), with NVIDIA's attributes. A GPU is either
// a GPU (or the parent of MIG devices) or handed to a VM, never both: its vfio
// device and its GPU device (or, partitionable, every device of the GPU)
// consume the same shared counters, so the scheduler allocates one or the
// other. A GPU with static MIG devices has no vfio device (unbinding it would
// destroy them under their owners). A GPU bound to vfio-pci is gone from NVML:
// only its vfio device is published until unprepare gives it back.

// Attribute and capacity names of vfio devices (NVIDIA's).
const (
	attrDeviceID         resourceapi.QualifiedName = "deviceID"
	attrVendorID         resourceapi.QualifiedName = "vendorID"
	attrIOMMUFDEnabled   resourceapi.QualifiedName = "iommuFDEnabled"
	capAddressableMemory resourceapi.QualifiedName = "addressableMemory"
)

const (
	deviceTypeVfio       = apiv1beta1.DeviceTypeVfio
	vfioDeviceNamePrefix = "gpu-vfio-"
	// passthroughCounter is the one counter of a GPU's passthrough counter
	// set.
	passthroughCounter = "gpu"
)

// vfioDeviceName is "gpu-vfio-<index>".
func vfioDeviceName(index int) string { return fmt.Sprintf("%s%d", vfioDeviceNamePrefix, index) }

// vfioUUID is the stable identity NVIDIA gives a vfio device: a name-based
// (SHA-1, DNS namespace) UUID of its bus ID.
func vfioUUID(busID string) string {
	return uuid.NewSHA1(uuid.NameSpaceDNS, []byte(busID)).String()
}

// pciDeviceNames are pci.ids names of GPUs, as NVIDIA publishes a vfio
// device's productName (the GPU may be invisible to NVML).
var pciDeviceNames = map[string]string{
	"0x20b0": "GA100 [A100 SXM4 40GB]",
	"0x20b2": "GA100 [A100 SXM4 80GB]",
	"0x2330": "GH100 [H100 SXM5 80GB]",
	"0x2335": "GH100 [H200 SXM 141GB]",
}

func pciProductName(deviceID string) string {
	if n, ok := pciDeviceNames[deviceID]; ok {
		return n
	}
	return "NVIDIA GPU " + deviceID
}

// gpuByBusID finds the NVML GPU of a PCI function.
func (inv Inventory) gpuByBusID(busID string) (GPU, bool) {
	for _, g := range inv.GPUs {
		if strings.EqualFold(g.PCIBusID, busID) {
			return g, true
		}
	}
	return GPU{}, false
}

// pciIndex is the index of a GPU's PCI function in PCIGPUs, -1 if it has
// none (passthrough off, or no sysfs entry).
func (inv Inventory) pciIndex(busID string) int {
	for i, f := range inv.PCIGPUs {
		if strings.EqualFold(f.BusID, busID) {
			return i
		}
	}
	return -1
}

// vfioCandidate reports whether a PCI function gets a vfio device, and the
// GPU it is (when NVML sees it).
func (inv Inventory) vfioCandidate(f PCIGPU, partitionableMIG bool) (GPU, bool, bool) {
	g, visible := inv.gpuByBusID(f.BusID)
	partitionable := partitionableMIG && isPartitionable(g)
	if visible && g.MIGEnabled && len(g.MigDevices) > 0 && !partitionable {
		return g, true, false
	}
	return g, visible, true
}

// passthroughCounterSet is the counter set a GPU's device and its vfio device
// share when the GPU has none (not partitionable): one "gpu" counter.
func passthroughCounterSet(g GPU) resourceapi.CounterSet {
	return resourceapi.CounterSet{Name: counterSetName(g.Minor), Counters: map[string]resourceapi.Counter{passthroughCounter: counter(1)}}
}

func passthroughConsumption(g GPU) []resourceapi.DeviceCounterConsumption {
	return []resourceapi.DeviceCounterConsumption{{CounterSet: counterSetName(g.Minor), Counters: map[string]resourceapi.Counter{passthroughCounter: counter(1)}}}
}

// fullConsumption is what the whole GPU takes of its partitionable counters.
func fullConsumption(g GPU) []resourceapi.DeviceCounterConsumption {
	all := map[string]resourceapi.Counter{}
	for name, v := range gpuTotals(g) {
		if v > 0 {
			all[name] = counter(v)
		}
	}
	return []resourceapi.DeviceCounterConsumption{{CounterSet: counterSetName(g.Minor), Counters: all}}
}

// vfioDevice is a PCI function as a vfio device.
func vfioDevice(inv Inventory, index int, f PCIGPU) resourceapi.Device {
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		attrType:           stringAttr(deviceTypeVfio),
		attrUUID:           stringAttr(vfioUUID(f.BusID)),
		attrDeviceID:       stringAttr(f.DeviceID),
		attrVendorID:       stringAttr(f.VendorID),
		attrProductName:    stringAttr(pciProductName(f.DeviceID)),
		attrIOMMUFDEnabled: {BoolValue: ptr.To(inv.IOMMUFD)},
		deviceattribute.StandardDeviceAttributePCIBusID: stringAttr(f.BusID),
	}
	if root := inv.PCIeRoots[f.BusID]; root != "" {
		attrs[deviceattribute.StandardDeviceAttributePCIeRoot] = stringAttr(root)
	}
	if f.NUMANode >= 0 {
		attrs[deviceattribute.StandardDeviceAttributeNUMANode] = intAttr(f.NUMANode)
	}
	addFabricAttributes(inv, f.BusID, attrs)
	return resourceapi.Device{
		Name:       vfioDeviceName(index),
		Attributes: attrs,
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			capAddressableMemory: {Value: *resource.NewQuantity(int64(f.AddressableMemory), resource.BinarySI)},
		},
	}
}

// findVfio maps a vfio device name to its PCI function.
func findVfio(inv Inventory, name string) (PCIGPU, bool) {
	rest, ok := strings.CutPrefix(name, vfioDeviceNamePrefix)
	if !ok {
		return PCIGPU{}, false
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i < 0 || i >= len(inv.PCIGPUs) || vfioDeviceName(i) != name {
		return PCIGPU{}, false
	}
	return inv.PCIGPUs[i], true
}
