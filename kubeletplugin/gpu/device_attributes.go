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

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/deviceattribute"
	"k8s.io/utils/ptr"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// Attribute and capacity names in the driver's domain (docs/compatibility.md).
const (
	attrType              resourceapi.QualifiedName = "type"
	attrUUID              resourceapi.QualifiedName = "uuid"
	attrParentUUID        resourceapi.QualifiedName = "parentUUID"
	attrProfile           resourceapi.QualifiedName = "profile"
	attrProductName       resourceapi.QualifiedName = "productName"
	attrBrand             resourceapi.QualifiedName = "brand"
	attrArchitecture      resourceapi.QualifiedName = "architecture"
	attrCUDACompute       resourceapi.QualifiedName = "cudaComputeCapability"
	attrDriverVersion     resourceapi.QualifiedName = "driverVersion"
	attrCUDADriverVersion resourceapi.QualifiedName = "cudaDriverVersion"
	attrAddressingMode    resourceapi.QualifiedName = "addressingMode"
	// attrCliqueID is ours: "<clusterUUID>.<cliqueId>" on every device of a
	// node in a multi-node NVLink domain.
	attrCliqueID resourceapi.QualifiedName = "cliqueID"

	capMemory          resourceapi.QualifiedName = "memory"
	capMultiprocessors resourceapi.QualifiedName = "multiprocessors"
	capCopyEngines     resourceapi.QualifiedName = "copyEngines"
	capDecoders        resourceapi.QualifiedName = "decoders"
	capEncoders        resourceapi.QualifiedName = "encoders"
	capJpegEngines     resourceapi.QualifiedName = "jpegEngines"
	capOfaEngines      resourceapi.QualifiedName = "ofaEngines"
)

func stringAttr(s string) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{StringValue: ptr.To(s)}
}

func versionAttr(s string) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{VersionValue: ptr.To(s)}
}

func intAttr(i int) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{IntValue: ptr.To(int64(i))}
}

// semver turns "580.65.06" or "9.0" into a semantic version ("580.65.6",
// "9.0.0"): at most three numeric parts, no leading zeros.
func semver(v string) (string, error) {
	parts := strings.Split(strings.TrimSpace(v), ".")
	if len(parts) == 0 || len(parts) > 3 {
		return "", fmt.Errorf("version %q: want 1 to 3 numeric parts", v)
	}
	out := make([]string, 3)
	for i := range out {
		out[i] = "0"
		if i < len(parts) {
			n, err := strconv.ParseUint(parts[i], 10, 32)
			if err != nil {
				return "", fmt.Errorf("version %q: part %q is not a number", v, parts[i])
			}
			out[i] = strconv.FormatUint(n, 10)
		}
	}
	return strings.Join(out, "."), nil
}

// commonAttributes are shared by a GPU and the MIG devices it hosts: product,
// versions, PCI topology, clique.
func commonAttributes(inv Inventory, g GPU) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		attrProductName:  stringAttr(g.ProductName),
		attrBrand:        stringAttr(g.Brand),
		attrArchitecture: stringAttr(g.Architecture),
	}
	if v, err := semver(g.CUDAComputeCapability); err == nil {
		attrs[attrCUDACompute] = versionAttr(v)
	}
	if v, err := semver(inv.CUDADriverVersion); err == nil {
		attrs[attrCUDADriverVersion] = versionAttr(v)
	}
	if v, err := semver(inv.DriverVersion); err == nil {
		attrs[attrDriverVersion] = versionAttr(v)
	}
	if g.AddressingMode != "" {
		attrs[attrAddressingMode] = stringAttr(g.AddressingMode)
	}
	if inv.CliqueID != "" {
		attrs[attrCliqueID] = stringAttr(inv.CliqueID)
	}
	if g.PCIBusID != "" {
		attrs[deviceattribute.StandardDeviceAttributePCIBusID] = stringAttr(g.PCIBusID)
	}
	if g.PCIeRoot != "" {
		attrs[deviceattribute.StandardDeviceAttributePCIeRoot] = stringAttr(g.PCIeRoot)
	}
	if g.NUMANode != nil {
		attrs[deviceattribute.StandardDeviceAttributeNUMANode] = intAttr(*g.NUMANode)
	}
	return attrs
}

func quantity(n uint64) resourceapi.DeviceCapacity {
	return resourceapi.DeviceCapacity{Value: *resource.NewQuantity(int64(n), resource.BinarySI)}
}

func count(n int) resourceapi.DeviceCapacity {
	return resourceapi.DeviceCapacity{Value: *resource.NewQuantity(int64(n), resource.DecimalSI)}
}

// gpuDevice is the full GPU as a device.
func gpuDevice(inv Inventory, g GPU) resourceapi.Device {
	attrs := commonAttributes(inv, g)
	attrs[attrType] = stringAttr(apiv1beta1.DeviceTypeGpu)
	attrs[attrUUID] = stringAttr(g.UUID)
	addFabricAttributes(inv, g.PCIBusID, attrs)
	return resourceapi.Device{
		Name:       gpuDeviceName(g.Minor),
		Attributes: attrs,
		Capacity:   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{capMemory: quantity(g.MemoryBytes)},
	}
}

func migCapacity(c MigCapacities) map[resourceapi.QualifiedName]resourceapi.DeviceCapacity {
	return map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
		capMultiprocessors: count(c.Multiprocessors),
		capCopyEngines:     count(c.CopyEngines),
		capDecoders:        count(c.Decoders),
		capEncoders:        count(c.Encoders),
		capJpegEngines:     count(c.JpegEngines),
		capOfaEngines:      count(c.OfaEngines),
		capMemory:          quantity(c.MemoryBytes),
	}
}

// migDevice is a MIG device, existing (uuid set) or possible (partitionable).
func migDevice(inv Inventory, parent GPU, profile string, giProfileID int, placement MigPlacement, caps MigCapacities, uuid string) resourceapi.Device {
	attrs := commonAttributes(inv, parent)
	attrs[attrType] = stringAttr(apiv1beta1.DeviceTypeMig)
	attrs[attrParentUUID] = stringAttr(parent.UUID)
	attrs[attrProfile] = stringAttr(profile)
	if uuid != "" {
		attrs[attrUUID] = stringAttr(uuid)
	}
	return resourceapi.Device{
		Name:       migDeviceName(parent.Minor, profile, giProfileID, placement.Start),
		Attributes: attrs,
		Capacity:   migCapacity(caps),
	}
}
