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

package nvml

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"k8s.io/klog/v2"
)

// NodeInfo is what a node's GPUs look like, read once through an Interface.
type NodeInfo struct {
	// DriverVersion is the kernel driver version ("580.95.05").
	DriverVersion string
	// CUDADriverVersion is the CUDA driver API version ("13.0").
	CUDADriverVersion string
	// GPUs are the full GPUs in NVML index order.
	GPUs []GPUInfo
	// LostGPUs are the indices of GPUs that have fallen off the bus, when
	// DiscoverOptions.SkipLostGPUs let discovery go on without them.
	LostGPUs []int
}

// DiscoverOptions tune Discover.
type DiscoverOptions struct {
	// SkipLostGPUs lists GPUs that answer ERROR_GPU_IS_LOST in
	// NodeInfo.LostGPUs instead of failing, so a plugin can keep serving
	// (and taint) the rest of the node.
	SkipLostGPUs bool
}

// GPUInfo describes one full GPU: its facts, its MIG profiles and devices,
// and its fabric registration.
type GPUInfo struct {
	GPUFacts
	// MIGProfiles are the GPU instance profiles the GPU supports (empty
	// unless MIG is enabled), ordered by slice count then name.
	MIGProfiles []MIGProfile
	// MIGDevices are the MIG devices (GPU instance + compute instance) that
	// exist now, ordered by GPU instance then compute instance ID.
	MIGDevices []MIGDeviceInfo
	// Fabric is the NVLink fabric registration.
	Fabric FabricInfo
}

// GPUFacts are what a full GPU is, read by DescribeGPU: the facts a consumer
// publishes as device attributes and capacity. The GPU plugin's inventory
// carries them as they are, so a new attribute is a field here, its read in
// DescribeGPU, and its mapping in the plugin.
type GPUFacts struct {
	Index int
	Minor int
	// UUID is "GPU-…".
	UUID string
	// ProductName is what nvidia-smi prints ("NVIDIA H100 80GB HBM3").
	ProductName string
	// Brand is "NVIDIA", "Tesla", ...
	Brand string
	// Architecture is "Ampere", "Hopper", "Blackwell", ...
	Architecture string
	// CUDAComputeCapability is "major.minor" ("9.0").
	CUDAComputeCapability string
	// PCIBusID is the sysfs form "0000:1b:00.0".
	PCIBusID string
	// NUMANode is nil when the driver does not know it.
	NUMANode *int
	// MemoryBytes is the total frame buffer.
	MemoryBytes uint64
	// AddressingMode is "HMM", "ATS" or "" (none or unknown).
	AddressingMode string
	// MIGEnabled is the current MIG mode.
	MIGEnabled bool
}

// MIGProfile is one GPU instance profile of a GPU, with its placements.
type MIGProfile struct {
	// Name is the nvidia-smi name ("1g.5gb", "1g.5gb+me").
	Name string
	// GIProfile is the GPU_INSTANCE_PROFILE_* selector to pass to
	// Device.GetGpuInstanceProfileInfo.
	GIProfile int
	// CIProfile is the COMPUTE_INSTANCE_PROFILE_* selector of the compute
	// instance that spans the whole GPU instance.
	CIProfile int
	// Info is the driver's profile info; Info.Id is the profile ID
	// nvidia-smi prints (19 for 1g.5gb on A100).
	Info GpuInstanceProfileInfo
	// Placements are the possible placements (start, size in memory slices).
	Placements []GpuInstancePlacement
}

// MIGDeviceInfo is one existing MIG device.
type MIGDeviceInfo struct {
	// UUID is "MIG-…".
	UUID        string
	ParentUUID  string
	ParentIndex int
	ParentMinor int
	// Profile is the nvidia-smi name ("3g.20gb", "1c.3g.20gb").
	Profile string
	// GIProfileID is the GPU instance profile ID (Info.Id of the profile).
	GIProfileID uint32
	GIID        uint32
	CIID        uint32
	// Placement is where the GPU instance sits, in memory slices.
	Placement GpuInstancePlacement
	// Attributes are the engine counts and memory of the device.
	Attributes DeviceAttributes
}

// MemoryBytes returns the device memory in bytes.
func (m MIGDeviceInfo) MemoryBytes() uint64 { return m.Attributes.MemorySizeMB * 1024 * 1024 }

// ErrGPULost is wrapped by errors about a GPU that has fallen off the bus.
var ErrGPULost = errors.New("GPU is lost")

// ReturnError turns a non-SUCCESS return code into an error naming the call.
// ERROR_GPU_IS_LOST wraps ErrGPULost.
func ReturnError(lib Interface, call string, r Return) error {
	if r == SUCCESS {
		return nil
	}
	msg := fmt.Sprintf("%v", r)
	if lib != nil {
		msg = lib.ErrorString(r)
	}
	if r == ERROR_GPU_IS_LOST {
		return fmt.Errorf("%s: %s: %w", call, msg, ErrGPULost)
	}
	return fmt.Errorf("%s: %s (nvml return %d)", call, msg, int32(r))
}

// Discover reads the node's GPUs, their MIG profiles and devices, and fabric
// info. lib must already be initialized. It fails on the first GPU that
// cannot be read; errors about a lost GPU wrap ErrGPULost.
func Discover(ctx context.Context, lib Interface) (*NodeInfo, error) {
	return DiscoverWithOptions(ctx, lib, DiscoverOptions{})
}

// DiscoverWithOptions is Discover with options.
func DiscoverWithOptions(ctx context.Context, lib Interface, opts DiscoverOptions) (*NodeInfo, error) {
	logger := klog.FromContext(ctx)
	driver, r := lib.SystemGetDriverVersion()
	if err := ReturnError(lib, "get driver version", r); err != nil {
		return nil, err
	}
	cuda, r := lib.SystemGetCudaDriverVersion()
	if err := ReturnError(lib, "get CUDA driver version", r); err != nil {
		return nil, err
	}
	count, r := lib.DeviceGetCount()
	if err := ReturnError(lib, "get device count", r); err != nil {
		return nil, err
	}
	node := &NodeInfo{DriverVersion: driver, CUDADriverVersion: CUDAVersionString(cuda)}
	for i := 0; i < count; i++ {
		dev, r := lib.DeviceGetHandleByIndex(i)
		if r == ERROR_GPU_IS_LOST && opts.SkipLostGPUs {
			logger.Info("GPU is lost; leaving it out", "index", i)
			node.LostGPUs = append(node.LostGPUs, i)
			continue
		}
		if err := ReturnError(lib, fmt.Sprintf("get GPU %d", i), r); err != nil {
			return nil, err
		}
		gpu, err := DescribeGPU(lib, i, dev)
		if errors.Is(err, ErrGPULost) && opts.SkipLostGPUs {
			logger.Info("GPU is lost; leaving it out", "index", i, "err", err)
			node.LostGPUs = append(node.LostGPUs, i)
			continue
		}
		if err != nil {
			return nil, err
		}
		logger.V(4).Info("Discovered GPU", "index", i, "uuid", gpu.UUID, "product", gpu.ProductName, "mig", gpu.MIGEnabled, "migDevices", len(gpu.MIGDevices))
		node.GPUs = append(node.GPUs, *gpu)
	}
	return node, nil
}

// DescribeGPU reads one full GPU.
func DescribeGPU(lib Interface, index int, dev Device) (*GPUInfo, error) {
	wrap := func(call string, r Return) error {
		return ReturnError(lib, fmt.Sprintf("GPU %d: %s", index, call), r)
	}
	g := &GPUInfo{GPUFacts: GPUFacts{Index: index}}
	var r Return
	if g.UUID, r = dev.GetUUID(); r != SUCCESS {
		return nil, wrap("get UUID", r)
	}
	if g.Minor, r = dev.GetMinorNumber(); r != SUCCESS {
		return nil, wrap("get minor number", r)
	}
	if g.ProductName, r = dev.GetName(); r != SUCCESS {
		return nil, wrap("get name", r)
	}
	brand, r := dev.GetBrand()
	if r != SUCCESS {
		return nil, wrap("get brand", r)
	}
	g.Brand = BrandName(brand)
	arch, r := dev.GetArchitecture()
	if r != SUCCESS {
		return nil, wrap("get architecture", r)
	}
	g.Architecture = ArchitectureName(arch)
	major, minor, r := dev.GetCudaComputeCapability()
	if r != SUCCESS {
		return nil, wrap("get CUDA compute capability", r)
	}
	g.CUDAComputeCapability = fmt.Sprintf("%d.%d", major, minor)
	pci, r := dev.GetPciInfo()
	if r != SUCCESS {
		return nil, wrap("get PCI info", r)
	}
	g.PCIBusID = NormalizePCIBusID(PCIBusIDString(pci))
	switch numa, r := dev.GetNumaNodeId(); r {
	case SUCCESS:
		if numa >= 0 {
			g.NUMANode = &numa
		}
	case ERROR_NOT_SUPPORTED, ERROR_FUNCTION_NOT_FOUND:
	default:
		return nil, wrap("get NUMA node", r)
	}
	mem, r := dev.GetMemoryInfo()
	if r != SUCCESS {
		return nil, wrap("get memory info", r)
	}
	g.MemoryBytes = mem.Total
	switch mode, r := dev.GetAddressingMode(); r {
	case SUCCESS:
		g.AddressingMode = AddressingModeName(mode)
	case ERROR_NOT_SUPPORTED, ERROR_FUNCTION_NOT_FOUND:
	default:
		return nil, wrap("get addressing mode", r)
	}
	fabric, err := describeFabric(lib, index, dev)
	if err != nil {
		return nil, err
	}
	g.Fabric = fabric

	switch current, _, r := dev.GetMigMode(); r {
	case SUCCESS:
		g.MIGEnabled = current == DEVICE_MIG_ENABLE
	case ERROR_NOT_SUPPORTED:
	default:
		return nil, wrap("get MIG mode", r)
	}
	if !g.MIGEnabled {
		return g, nil
	}
	if g.MIGProfiles, err = describeMIGProfiles(lib, index, dev, g.MemoryBytes); err != nil {
		return nil, err
	}
	if g.MIGDevices, err = describeMIGDevices(lib, g, dev); err != nil {
		return nil, err
	}
	return g, nil
}

// ERROR_FUNCTION_NOT_FOUND is returned by old drivers for calls they lack.
const ERROR_FUNCTION_NOT_FOUND Return = 13

func describeMIGProfiles(lib Interface, index int, dev Device, totalMemory uint64) ([]MIGProfile, error) {
	var out []MIGProfile
	for p := 0; p < GPU_INSTANCE_PROFILE_COUNT; p++ {
		info, r := dev.GetGpuInstanceProfileInfo(p)
		if r == ERROR_NOT_SUPPORTED || r == ERROR_INVALID_ARGUMENT || r == ERROR_NOT_FOUND {
			continue
		}
		if r != SUCCESS {
			return nil, ReturnError(lib, fmt.Sprintf("GPU %d: get GPU instance profile %d", index, p), r)
		}
		placements, r := dev.GetGpuInstancePossiblePlacements(&info)
		if r != SUCCESS {
			return nil, ReturnError(lib, fmt.Sprintf("GPU %d: get placements of GPU instance profile %d", index, info.Id), r)
		}
		ci, err := FullComputeInstanceProfile(info.SliceCount)
		if err != nil {
			return nil, fmt.Errorf("GPU %d: GPU instance profile %d: %w", index, info.Id, err)
		}
		out = append(out, MIGProfile{
			Name:       MigProfileName(p, info.SliceCount, info.SliceCount, totalMemory, info.MemorySizeMB),
			GIProfile:  p,
			CIProfile:  ci,
			Info:       info,
			Placements: placements,
		})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Info.SliceCount != out[j].Info.SliceCount {
			return out[i].Info.SliceCount < out[j].Info.SliceCount
		}
		return out[i].Info.MemorySizeMB < out[j].Info.MemorySizeMB
	})
	return out, nil
}

func describeMIGDevices(lib Interface, g *GPUInfo, dev Device) ([]MIGDeviceInfo, error) {
	wrap := func(call string, r Return) error {
		return ReturnError(lib, fmt.Sprintf("GPU %d: %s", g.Index, call), r)
	}
	max, r := dev.GetMaxMigDeviceCount()
	if r != SUCCESS {
		return nil, wrap("get max MIG device count", r)
	}
	byID := map[uint32]MIGProfile{}
	for _, p := range g.MIGProfiles {
		byID[p.Info.Id] = p
	}
	var out []MIGDeviceInfo
	for i := 0; i < max; i++ {
		mig, r := dev.GetMigDeviceHandleByIndex(i)
		if r == ERROR_NOT_FOUND || r == ERROR_INVALID_ARGUMENT {
			continue
		}
		if r != SUCCESS {
			return nil, wrap(fmt.Sprintf("get MIG device %d", i), r)
		}
		m := MIGDeviceInfo{ParentUUID: g.UUID, ParentIndex: g.Index, ParentMinor: g.Minor}
		if m.UUID, r = mig.GetUUID(); r != SUCCESS {
			return nil, wrap(fmt.Sprintf("get UUID of MIG device %d", i), r)
		}
		giID, r := mig.GetGpuInstanceId()
		if r != SUCCESS {
			return nil, wrap(fmt.Sprintf("get GPU instance of MIG device %s", m.UUID), r)
		}
		ciID, r := mig.GetComputeInstanceId()
		if r != SUCCESS {
			return nil, wrap(fmt.Sprintf("get compute instance of MIG device %s", m.UUID), r)
		}
		m.GIID, m.CIID = uint32(giID), uint32(ciID)
		if m.Attributes, r = mig.GetAttributes(); r != SUCCESS {
			return nil, wrap(fmt.Sprintf("get attributes of MIG device %s", m.UUID), r)
		}
		gi, r := dev.GetGpuInstanceById(giID)
		if r != SUCCESS {
			return nil, wrap(fmt.Sprintf("get GPU instance %d", giID), r)
		}
		giInfo, r := gi.GetInfo()
		if r != SUCCESS {
			return nil, wrap(fmt.Sprintf("get info of GPU instance %d", giID), r)
		}
		m.GIProfileID, m.Placement = giInfo.ProfileId, giInfo.Placement
		profile, ok := byID[giInfo.ProfileId]
		if !ok {
			return nil, fmt.Errorf("GPU %d: MIG device %s has GPU instance profile %d, which the GPU does not list", g.Index, m.UUID, giInfo.ProfileId)
		}
		m.Profile = MigProfileName(profile.GIProfile, m.Attributes.GpuInstanceSliceCount, m.Attributes.ComputeInstanceSliceCount, g.MemoryBytes, profile.Info.MemorySizeMB)
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].GIID != out[j].GIID {
			return out[i].GIID < out[j].GIID
		}
		return out[i].CIID < out[j].CIID
	})
	return out, nil
}
