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
	"github.com/computedomain-operator/computedomain-operator/internal/fabricmanager"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// Inventory is what the plugin knows about the node's devices, read from NVML
// at start-up and refreshed on health changes. It is plain data, so slices can
// be built and tested without NVML.
type Inventory struct {
	// DriverVersion is the kernel driver version as NVML prints it ("580.65.06").
	DriverVersion string
	// CUDADriverVersion is "major.minor" ("12.9").
	CUDADriverVersion string
	// CliqueID is "<clusterUUID>.<cliqueId>", empty without multi-node NVLink.
	CliqueID string
	GPUs     []GPU
	// LostGPUs are the NVML indexes of GPUs that had fallen off the bus at
	// discovery: left out until a rediscovery finds them again.
	LostGPUs []int
	// PCIGPUs are the NVIDIA GPUs' PCI functions by bus ID, whatever driver
	// they are bound to (PassthroughSupport; passthrough.go).
	PCIGPUs []PCIGPU
	// PCIeRoots are the PCIe roots of PCIGPUs by bus ID.
	PCIeRoots map[string]string
	// IOMMUFD: the host has iommufd (/dev/iommu).
	IOMMUFD bool
	// Fabric are the GPUs' Fabric Manager partitions by bus ID
	// (FabricManagerPartitioning; fabric_partitions.go).
	Fabric map[string]fabricmanager.Membership
}

// GPU is one full GPU: the facts NVML reports of it (nvml.GPUFacts, carried
// as they are from discovery to the device attributes), where it sits in the
// PCIe tree, and its MIG profiles and devices in the plugin's terms.
type GPU struct {
	nvml.GPUFacts
	// PCIeRoot is the standard pcieRoot attribute value ("pci0000:00"),
	// empty when sysfs could not resolve it.
	PCIeRoot string
	// MigProfiles are the profiles the GPU supports, for partitionable MIG.
	MigProfiles []MigProfile
	// MigDevices are the MIG devices that exist now (static MIG).
	MigDevices []MigDevice
}

// MigCapacities are the engines and memory of a MIG profile.
type MigCapacities struct {
	Multiprocessors int
	CopyEngines     int
	Decoders        int
	Encoders        int
	JpegEngines     int
	OfaEngines      int
	MemoryBytes     uint64
}

// MigProfile is a GPU instance profile (with its full-size compute instance).
type MigProfile struct {
	// Name as nvidia-smi prints it: "1g.5gb", "1g.10gb+me".
	Name string
	// GIProfileID is the NVML GPU instance profile ID (nvidia-smi's "ID").
	GIProfileID int
	// Selector is the NVML profile enum passed to GetGpuInstanceProfileInfo.
	Selector int
	// CIProfileSelector is the compute instance profile enum for a CI that
	// spans the whole GPU instance.
	CIProfileSelector int
	// Placements are the possible start/size pairs, in memory slices.
	Placements []MigPlacement
	Capacities MigCapacities
}

// MigPlacement is a start slice and size in memory slices.
type MigPlacement struct {
	Start int
	Size  int
}

// MigDevice is an existing MIG device.
type MigDevice struct {
	UUID        string
	Profile     string
	GIProfileID int
	GIID        int
	CIID        int
	Placement   MigPlacement
	Capacities  MigCapacities
}

// MemorySlices is the number of memory slices the GPU's placements span (the
// highest start+size of any placement), 0 without MIG profiles.
func (g GPU) MemorySlices() int {
	n := 0
	for _, p := range g.MigProfiles {
		for _, pl := range p.Placements {
			n = max(n, pl.Start+pl.Size)
		}
	}
	return n
}
