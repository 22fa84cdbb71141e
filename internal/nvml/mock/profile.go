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
	"embed"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

//go:embed profiles/*.yaml
var embeddedProfiles embed.FS

// Profile describes a node model. See docs/mock-nvml.md for the format.
type Profile struct {
	// Name identifies the profile ("gb200-nvl72").
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// DriverVersion is the kernel driver version, 580 or newer.
	DriverVersion string `json:"driverVersion"`
	// CUDADriverVersion is "major.minor" ("13.0").
	CUDADriverVersion string `json:"cudaDriverVersion"`
	// GPUCount is the number of GPUs on the node.
	GPUCount int     `json:"gpuCount"`
	GPU      GPUSpec `json:"gpu"`
	// Fabric, when set, gives the GPUs multi-node NVLink fabric info.
	Fabric *FabricSpec `json:"fabric,omitempty"`
	// MIG, when set, makes the GPUs MIG-capable and MIG-enabled.
	MIG *MIGSpec `json:"mig,omitempty"`
}

// GPUSpec holds the facts every GPU of the node shares.
type GPUSpec struct {
	// ProductName as nvidia-smi prints it ("NVIDIA GB200").
	ProductName string `json:"productName"`
	// Brand: NVIDIA or Tesla.
	Brand string `json:"brand"`
	// Architecture: Ampere, Hopper or Blackwell.
	Architecture string `json:"architecture"`
	// CUDAComputeCapability is "major.minor" ("10.0").
	CUDAComputeCapability string `json:"cudaComputeCapability"`
	// MemoryMiB is the frame buffer size nvidia-smi reports.
	MemoryMiB uint64 `json:"memoryMiB"`
	// AddressingMode: HMM, ATS, or empty for none.
	AddressingMode string `json:"addressingMode,omitempty"`
	// PCIBusIDs are the bus IDs per GPU index ("0000:1b:00.0"); one per GPU.
	PCIBusIDs []string `json:"pciBusIds"`
	// NUMANodes are the NUMA nodes per GPU index; empty means unknown.
	NUMANodes []int `json:"numaNodes,omitempty"`
	// PCIDeviceID is the GPUs' PCI device ID as sysfs shows it ("0x2330"
	// for an H100 SXM5 80GB); a fake host root writes it. Optional.
	PCIDeviceID string `json:"pciDeviceId,omitempty"`
}

// FabricSpec describes the NVLink fabric the fabric manager registers the
// GPUs with.
type FabricSpec struct {
	// MultiNode: the NVLink domain spans nodes (GB200/GB300 NVL72), so the
	// GPUs report a cluster UUID and clique per rack. Without it (HGX with
	// NVSwitch) registration completes with a zero cluster UUID: no clique.
	MultiNode bool `json:"multiNode,omitempty"`
	// CliqueID is the clique every GPU of a rack reports (multiNode only).
	CliqueID uint32 `json:"cliqueId,omitempty"`
	// NodesPerRack is the default number of compute trays in one NVLink
	// domain, 18 for NVL72 (multiNode only).
	NodesPerRack int `json:"nodesPerRack,omitempty"`
	// Partitions is the Fabric Manager's partition table in shared NVSwitch
	// mode (HGX, not multiNode): the groups of GPUs it can connect through
	// the NVSwitches, which the mock Fabric Manager serves
	// (internal/fabricmanager). Empty: the node runs no Fabric Manager in
	// that mode.
	Partitions []FabricPartitionSpec `json:"partitions,omitempty"`
}

// FabricPartitionSpec is one Fabric Manager partition.
type FabricPartitionSpec struct {
	// ID is the partition ID Fabric Manager reports (0..).
	ID int `json:"id"`
	// GPUs are the partition's GPUs by physical ID (module ID), 1..gpuCount:
	// the GPU at index i has physical ID i+1.
	GPUs []int `json:"gpus"`
}

// MIGSpec is the MIG profile table of the GPU and its static layouts.
type MIGSpec struct {
	// MaxDevices is GetMaxMigDeviceCount (7 on A100/H100).
	MaxDevices int `json:"maxDevices"`
	// Profiles are the GPU instance profiles.
	Profiles []MIGProfileSpec `json:"profiles"`
	// Layouts are static MIG layouts; GPU i gets Layouts[i % len(Layouts)].
	// An empty layout leaves the GPU MIG-enabled with no instances.
	Layouts [][]MIGInstanceSpec `json:"layouts,omitempty"`
}

// MIGProfileSpec is one GPU instance profile, as nvidia-smi mig -lgip and
// -lgipp show it.
type MIGProfileSpec struct {
	// Name is the nvidia-smi name ("1g.5gb+me"); it is checked against the
	// name computed from the other fields.
	Name string `json:"name"`
	// Selector is the GPU_INSTANCE_PROFILE_* suffix: 1_SLICE, 1_SLICE_REV1,
	// 1_SLICE_REV2, 2_SLICE, 3_SLICE, 4_SLICE, 7_SLICE, 8_SLICE, ...
	Selector string `json:"selector"`
	// ID is the profile ID nvidia-smi prints (19 for 1g.5gb on A100).
	ID        uint32 `json:"id"`
	Slices    uint32 `json:"slices"`
	Instances uint32 `json:"instances"`
	MemoryMiB uint64 `json:"memoryMiB"`

	Multiprocessors uint32 `json:"multiprocessors"`
	CopyEngines     uint32 `json:"copyEngines"`
	Decoders        uint32 `json:"decoders"`
	Encoders        uint32 `json:"encoders"`
	JPEGEngines     uint32 `json:"jpegEngines"`
	OFAEngines      uint32 `json:"ofaEngines"`

	// Placements are the possible start memory slices; PlacementSize is the
	// number of memory slices an instance occupies.
	Placements    []uint32 `json:"placements"`
	PlacementSize uint32   `json:"placementSize"`
}

// MIGInstanceSpec places one MIG device (a GPU instance with one compute
// instance spanning it) in a static layout.
type MIGInstanceSpec struct {
	Profile string `json:"profile"`
	Start   uint32 `json:"start"`
}

var giSelectors = map[string]int{
	"1_SLICE":        nvml.GPU_INSTANCE_PROFILE_1_SLICE,
	"2_SLICE":        nvml.GPU_INSTANCE_PROFILE_2_SLICE,
	"3_SLICE":        nvml.GPU_INSTANCE_PROFILE_3_SLICE,
	"4_SLICE":        nvml.GPU_INSTANCE_PROFILE_4_SLICE,
	"7_SLICE":        nvml.GPU_INSTANCE_PROFILE_7_SLICE,
	"8_SLICE":        nvml.GPU_INSTANCE_PROFILE_8_SLICE,
	"6_SLICE":        nvml.GPU_INSTANCE_PROFILE_6_SLICE,
	"1_SLICE_REV1":   nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1,
	"2_SLICE_REV1":   nvml.GPU_INSTANCE_PROFILE_2_SLICE_REV1,
	"1_SLICE_REV2":   nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2,
	"1_SLICE_GFX":    nvml.GPU_INSTANCE_PROFILE_1_SLICE_GFX,
	"2_SLICE_GFX":    nvml.GPU_INSTANCE_PROFILE_2_SLICE_GFX,
	"4_SLICE_GFX":    nvml.GPU_INSTANCE_PROFILE_4_SLICE_GFX,
	"1_SLICE_NO_ME":  nvml.GPU_INSTANCE_PROFILE_1_SLICE_NO_ME,
	"2_SLICE_NO_ME":  nvml.GPU_INSTANCE_PROFILE_2_SLICE_NO_ME,
	"1_SLICE_ALL_ME": nvml.GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME,
	"2_SLICE_ALL_ME": nvml.GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME,
	"3_SLICE_GFX":    nvml.GPU_INSTANCE_PROFILE_3_SLICE_GFX,
}

var architectures = map[string]nvml.DeviceArchitecture{
	"Ampere":    nvml.DEVICE_ARCH_AMPERE,
	"Hopper":    nvml.DEVICE_ARCH_HOPPER,
	"Blackwell": nvml.DEVICE_ARCH_BLACKWELL,
}

var brands = map[string]nvml.BrandType{
	"NVIDIA": nvml.BRAND_NVIDIA,
	"Tesla":  nvml.BRAND_TESLA,
}

var addressingModes = map[string]nvml.DeviceAddressingModeType{
	"":    nvml.DEVICE_ADDRESSING_MODE_NONE,
	"HMM": nvml.DEVICE_ADDRESSING_MODE_HMM,
	"ATS": nvml.DEVICE_ADDRESSING_MODE_ATS,
}

// ProfileNames lists the embedded profiles.
func ProfileNames() []string {
	entries, err := embeddedProfiles.ReadDir("profiles")
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// LoadProfile returns an embedded profile by name.
func LoadProfile(name string) (*Profile, error) {
	data, err := embeddedProfiles.ReadFile(path.Join("profiles", name+".yaml"))
	if err != nil {
		return nil, fmt.Errorf("profile %q: unknown (allowed: %s)", name, strings.Join(ProfileNames(), ", "))
	}
	return ParseProfile(data)
}

// LoadProfileFile reads and validates a profile from a file.
func LoadProfileFile(file string) (*Profile, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read profile: %w", err)
	}
	p, err := ParseProfile(data)
	if err != nil {
		return nil, fmt.Errorf("profile file %s: %w", file, err)
	}
	return p, nil
}

// ParseProfile decodes (strictly: unknown fields are errors) and validates a
// profile.
func ParseProfile(data []byte) (*Profile, error) {
	var p Profile
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, fmt.Errorf("decode profile: %w", err)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

func keys[T any](m map[string]T) string {
	var out []string
	for k := range m {
		if k == "" {
			k = `""`
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// Validate checks a profile; errors name the field and the allowed values.
func (p *Profile) Validate() error {
	if p.Name == "" {
		return fmt.Errorf("name: required")
	}
	wrap := func(err error) error { return fmt.Errorf("profile %s: %w", p.Name, err) }
	major, err := strconv.Atoi(strings.SplitN(p.DriverVersion, ".", 2)[0])
	if err != nil || major < 580 {
		return wrap(fmt.Errorf("driverVersion %q: want a version of 580 or newer (\"580.95.05\")", p.DriverVersion))
	}
	if _, err := parseMajorMinor(p.CUDADriverVersion); err != nil {
		return wrap(fmt.Errorf("cudaDriverVersion: %w", err))
	}
	if p.GPUCount < 1 || p.GPUCount > 64 {
		return wrap(fmt.Errorf("gpuCount %d: want 1..64", p.GPUCount))
	}
	g := p.GPU
	if g.ProductName == "" {
		return wrap(fmt.Errorf("gpu.productName: required"))
	}
	if _, ok := brands[g.Brand]; !ok {
		return wrap(fmt.Errorf("gpu.brand %q: allowed: %s", g.Brand, keys(brands)))
	}
	if _, ok := architectures[g.Architecture]; !ok {
		return wrap(fmt.Errorf("gpu.architecture %q: allowed: %s", g.Architecture, keys(architectures)))
	}
	if _, err := parseMajorMinor(g.CUDAComputeCapability); err != nil {
		return wrap(fmt.Errorf("gpu.cudaComputeCapability: %w", err))
	}
	if g.MemoryMiB == 0 {
		return wrap(fmt.Errorf("gpu.memoryMiB: required"))
	}
	if _, ok := addressingModes[g.AddressingMode]; !ok {
		return wrap(fmt.Errorf("gpu.addressingMode %q: allowed: %s", g.AddressingMode, keys(addressingModes)))
	}
	if len(g.PCIBusIDs) != p.GPUCount {
		return wrap(fmt.Errorf("gpu.pciBusIds: want %d entries (gpuCount), got %d", p.GPUCount, len(g.PCIBusIDs)))
	}
	for i, id := range g.PCIBusIDs {
		if _, err := nvmlBusID(id); err != nil {
			return wrap(fmt.Errorf("gpu.pciBusIds[%d]: %w", i, err))
		}
	}
	if len(g.NUMANodes) != 0 && len(g.NUMANodes) != p.GPUCount {
		return wrap(fmt.Errorf("gpu.numaNodes: want none or %d entries (gpuCount), got %d", p.GPUCount, len(g.NUMANodes)))
	}
	if f := p.Fabric; f != nil {
		if f.MultiNode && f.NodesPerRack < 1 {
			return wrap(fmt.Errorf("fabric.nodesPerRack %d: want at least 1 with multiNode", f.NodesPerRack))
		}
		if !f.MultiNode && (f.NodesPerRack != 0 || f.CliqueID != 0) {
			return wrap(fmt.Errorf("fabric: cliqueId and nodesPerRack need multiNode: true"))
		}
		if err := validatePartitions(f, p.GPUCount); err != nil {
			return wrap(err)
		}
	}
	if id := p.GPU.PCIDeviceID; id != "" {
		var n uint16
		if _, err := fmt.Sscanf(id, "0x%04x", &n); err != nil || len(id) != 6 {
			return wrap(fmt.Errorf("gpu.pciDeviceId %q: want 0x and 4 hex digits (\"0x2330\")", id))
		}
	}
	if p.MIG != nil {
		if err := p.validateMIG(); err != nil {
			return wrap(err)
		}
	}
	return nil
}

// maxMemorySlices is the number of memory slices of a MIG-capable GPU (A100, H100, H200, B200): a placement
// names slices 0..7. It bounds what a profile file may ask of the mock's placement state.
const maxMemorySlices = 8

func (p *Profile) validateMIG() error {
	m := p.MIG
	if m.MaxDevices < 1 {
		return fmt.Errorf("mig.maxDevices %d: want at least 1", m.MaxDevices)
	}
	if len(m.Profiles) == 0 {
		return fmt.Errorf("mig.profiles: required when mig is set")
	}
	names, ids := map[string]bool{}, map[uint32]bool{}
	for i, mp := range m.Profiles {
		field := fmt.Sprintf("mig.profiles[%d] (%s)", i, mp.Name)
		sel, ok := giSelectors[mp.Selector]
		if !ok {
			return fmt.Errorf("%s.selector %q: allowed: %s", field, mp.Selector, keys(giSelectors))
		}
		if names[mp.Name] || ids[mp.ID] {
			return fmt.Errorf("%s: duplicate name or id %d", field, mp.ID)
		}
		names[mp.Name], ids[mp.ID] = true, true
		if _, err := nvml.FullComputeInstanceProfile(mp.Slices); err != nil {
			return fmt.Errorf("%s.slices: %w", field, err)
		}
		if mp.Instances < 1 || mp.MemoryMiB == 0 || mp.Multiprocessors == 0 || mp.PlacementSize == 0 || len(mp.Placements) == 0 {
			return fmt.Errorf("%s: instances, memoryMiB, multiprocessors, placements and placementSize are required", field)
		}
		if mp.PlacementSize > maxMemorySlices {
			return fmt.Errorf("%s.placementSize %d: want 1..%d (a MIG-capable GPU has %d memory slices)", field, mp.PlacementSize, maxMemorySlices, maxMemorySlices)
		}
		for j, start := range mp.Placements {
			if start > maxMemorySlices-mp.PlacementSize {
				return fmt.Errorf("%s.placements[%d] %d: an instance of %d slices must start at 0..%d", field, j, start, mp.PlacementSize, maxMemorySlices-mp.PlacementSize)
			}
		}
		want := nvml.MigProfileName(sel, mp.Slices, mp.Slices, p.GPU.MemoryMiB*mib, mp.MemoryMiB)
		if want != mp.Name {
			return fmt.Errorf("%s.name: the other fields make this profile %q", field, want)
		}
	}
	// Dry-run every layout on a scratch GPU so a bad layout fails at load.
	for li := range m.Layouts {
		g := newMIGState(p)
		for ii, inst := range m.Layouts[li] {
			mp := p.migProfile(inst.Profile)
			if mp == nil {
				return fmt.Errorf("mig.layouts[%d][%d].profile %q: allowed: %s", li, ii, inst.Profile, strings.Join(p.migProfileNames(), ", "))
			}
			if r := g.canPlace(mp, inst.Start); r != nvml.SUCCESS {
				return fmt.Errorf("mig.layouts[%d][%d]: %s at slice %d does not fit (placements %v, or overlaps an earlier instance)", li, ii, inst.Profile, inst.Start, mp.Placements)
			}
			g.place(mp, inst.Start)
		}
	}
	return nil
}

func (p *Profile) migProfile(name string) *MIGProfileSpec {
	for i := range p.MIG.Profiles {
		if p.MIG.Profiles[i].Name == name {
			return &p.MIG.Profiles[i]
		}
	}
	return nil
}

func (p *Profile) migProfileNames() []string {
	var out []string
	for _, mp := range p.MIG.Profiles {
		out = append(out, mp.Name)
	}
	return out
}

func parseMajorMinor(s string) (int, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 2 {
		return 0, fmt.Errorf("%q: want \"major.minor\"", s)
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || major < 0 || minor < 0 || minor > 99 {
		return 0, fmt.Errorf("%q: want \"major.minor\"", s)
	}
	return major*1000 + minor*10, nil
}

// nvmlBusID turns "0000:1b:00.0" into NVML's "00000000:1B:00.0".
func nvmlBusID(s string) (string, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 || !strings.Contains(parts[2], ".") {
		return "", fmt.Errorf("%q: want domain:bus:device.function (\"0000:1b:00.0\")", s)
	}
	var domain, bus, dev, fn uint64
	var err error
	if domain, err = strconv.ParseUint(parts[0], 16, 32); err != nil {
		return "", fmt.Errorf("%q: domain: %w", s, err)
	}
	if bus, err = strconv.ParseUint(parts[1], 16, 8); err != nil {
		return "", fmt.Errorf("%q: bus: %w", s, err)
	}
	df := strings.SplitN(parts[2], ".", 2)
	if dev, err = strconv.ParseUint(df[0], 16, 8); err != nil {
		return "", fmt.Errorf("%q: device: %w", s, err)
	}
	if fn, err = strconv.ParseUint(df[1], 16, 8); err != nil {
		return "", fmt.Errorf("%q: function: %w", s, err)
	}
	return fmt.Sprintf("%08X:%02X:%02X.%X", domain, bus, dev, fn), nil
}

const mib = 1024 * 1024

// validatePartitions checks the Fabric Manager partition table: unique IDs
// from 0, each partition a non-empty set of physical IDs 1..gpuCount, only on
// a single-node fabric.
func validatePartitions(f *FabricSpec, gpuCount int) error {
	ids := map[int]bool{}
	for i, part := range f.Partitions {
		path := fmt.Sprintf("fabric.partitions[%d]", i)
		if f.MultiNode {
			return fmt.Errorf("%s: Fabric Manager partitions need a single-node fabric (multiNode: false)", path)
		}
		if part.ID < 0 || ids[part.ID] {
			return fmt.Errorf("%s.id %d: want a unique ID of 0 or more", path, part.ID)
		}
		ids[part.ID] = true
		if len(part.GPUs) == 0 {
			return fmt.Errorf("%s.gpus: want at least one physical ID", path)
		}
		seen := map[int]bool{}
		for j, g := range part.GPUs {
			if g < 1 || g > gpuCount || seen[g] {
				return fmt.Errorf("%s.gpus[%d] %d: want a physical ID 1..%d (gpuCount), each once", path, j, g, gpuCount)
			}
			seen[g] = true
		}
	}
	return nil
}
