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

import gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

// Value types re-exported from go-nvml so that consumers import only this
// package. They are aliases: a value from go-nvml is a value of ours.
type (
	// Return is an NVML return code; SUCCESS is the only non-error value.
	Return = gonvml.Return
	// PciInfo is the PCI identity of a GPU (BusId holds "0000:1B:00.0").
	PciInfo = gonvml.PciInfo
	// Memory is a GPU's frame-buffer size and usage in bytes.
	Memory = gonvml.Memory
	// BrandType is the product brand (BRAND_NVIDIA, BRAND_TESLA, ...).
	BrandType = gonvml.BrandType
	// DeviceArchitecture is the GPU architecture (DEVICE_ARCH_HOPPER, ...).
	DeviceArchitecture = gonvml.DeviceArchitecture
	// DeviceAddressingMode carries a DeviceAddressingModeType in Value.
	DeviceAddressingMode = gonvml.DeviceAddressingMode
	// DeviceAddressingModeType is NONE, HMM or ATS.
	DeviceAddressingModeType = gonvml.DeviceAddressingModeType
	// ComputeMode is the compute mode (COMPUTEMODE_DEFAULT, ...).
	ComputeMode = gonvml.ComputeMode
	// GpuFabricInfo is the NVLink fabric registration of a GPU, version 3
	// (cluster UUID, clique ID, state, status, health mask).
	GpuFabricInfo = gonvml.GpuFabricInfo_v3
	// GpuInstanceProfileInfo describes a MIG GPU instance profile.
	GpuInstanceProfileInfo = gonvml.GpuInstanceProfileInfo
	// GpuInstancePlacement is a start slice and a size in memory slices.
	GpuInstancePlacement = gonvml.GpuInstancePlacement
	// ComputeInstanceProfileInfo describes a MIG compute instance profile.
	ComputeInstanceProfileInfo = gonvml.ComputeInstanceProfileInfo
	// ComputeInstancePlacement is a start slice and a size in compute slices.
	ComputeInstancePlacement = gonvml.ComputeInstancePlacement
	// DeviceAttributes are the engine counts and memory of a MIG device.
	DeviceAttributes = gonvml.DeviceAttributes
)

// Return codes used by this project.
const (
	SUCCESS                      = gonvml.SUCCESS
	ERROR_UNINITIALIZED          = gonvml.ERROR_UNINITIALIZED
	ERROR_INVALID_ARGUMENT       = gonvml.ERROR_INVALID_ARGUMENT
	ERROR_NOT_SUPPORTED          = gonvml.ERROR_NOT_SUPPORTED
	ERROR_NOT_FOUND              = gonvml.ERROR_NOT_FOUND
	ERROR_TIMEOUT                = gonvml.ERROR_TIMEOUT
	ERROR_LIBRARY_NOT_FOUND      = gonvml.ERROR_LIBRARY_NOT_FOUND
	ERROR_GPU_IS_LOST            = gonvml.ERROR_GPU_IS_LOST
	ERROR_IN_USE                 = gonvml.ERROR_IN_USE
	ERROR_INSUFFICIENT_RESOURCES = gonvml.ERROR_INSUFFICIENT_RESOURCES
	ERROR_UNKNOWN                = gonvml.ERROR_UNKNOWN
)

// MIG modes as returned by Device.GetMigMode.
const (
	DEVICE_MIG_DISABLE = gonvml.DEVICE_MIG_DISABLE
	DEVICE_MIG_ENABLE  = gonvml.DEVICE_MIG_ENABLE
)

// Fabric states (GpuFabricInfo.State) and the degraded-bandwidth health bits
// (GpuFabricInfo.HealthMask).
const (
	GPU_FABRIC_STATE_NOT_SUPPORTED = gonvml.GPU_FABRIC_STATE_NOT_SUPPORTED
	GPU_FABRIC_STATE_NOT_STARTED   = gonvml.GPU_FABRIC_STATE_NOT_STARTED
	GPU_FABRIC_STATE_IN_PROGRESS   = gonvml.GPU_FABRIC_STATE_IN_PROGRESS
	GPU_FABRIC_STATE_COMPLETED     = gonvml.GPU_FABRIC_STATE_COMPLETED

	GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_NOT_SUPPORTED = gonvml.GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_NOT_SUPPORTED
	GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_TRUE          = gonvml.GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_TRUE
	GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_FALSE         = gonvml.GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_FALSE
	GPU_FABRIC_HEALTH_MASK_SHIFT_DEGRADED_BW         = gonvml.GPU_FABRIC_HEALTH_MASK_SHIFT_DEGRADED_BW
	GPU_FABRIC_HEALTH_MASK_WIDTH_DEGRADED_BW         = gonvml.GPU_FABRIC_HEALTH_MASK_WIDTH_DEGRADED_BW
)

// Event types for Device.RegisterEvents and EventData.EventType.
const (
	EventTypeNone              = gonvml.EventTypeNone
	EventTypeXidCriticalError  = gonvml.EventTypeXidCriticalError
	EventTypeSingleBitEccError = gonvml.EventTypeSingleBitEccError
	EventTypeDoubleBitEccError = gonvml.EventTypeDoubleBitEccError
	EventTypeAll               = gonvml.EventTypeAll
)

// GPU instance profile selectors for Device.GetGpuInstanceProfileInfo. These
// are enumeration values, not the profile IDs nvidia-smi prints (those are
// GpuInstanceProfileInfo.Id).
const (
	GPU_INSTANCE_PROFILE_1_SLICE        = gonvml.GPU_INSTANCE_PROFILE_1_SLICE
	GPU_INSTANCE_PROFILE_2_SLICE        = gonvml.GPU_INSTANCE_PROFILE_2_SLICE
	GPU_INSTANCE_PROFILE_3_SLICE        = gonvml.GPU_INSTANCE_PROFILE_3_SLICE
	GPU_INSTANCE_PROFILE_4_SLICE        = gonvml.GPU_INSTANCE_PROFILE_4_SLICE
	GPU_INSTANCE_PROFILE_7_SLICE        = gonvml.GPU_INSTANCE_PROFILE_7_SLICE
	GPU_INSTANCE_PROFILE_8_SLICE        = gonvml.GPU_INSTANCE_PROFILE_8_SLICE
	GPU_INSTANCE_PROFILE_6_SLICE        = gonvml.GPU_INSTANCE_PROFILE_6_SLICE
	GPU_INSTANCE_PROFILE_1_SLICE_REV1   = gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1
	GPU_INSTANCE_PROFILE_2_SLICE_REV1   = gonvml.GPU_INSTANCE_PROFILE_2_SLICE_REV1
	GPU_INSTANCE_PROFILE_1_SLICE_REV2   = gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2
	GPU_INSTANCE_PROFILE_1_SLICE_GFX    = gonvml.GPU_INSTANCE_PROFILE_1_SLICE_GFX
	GPU_INSTANCE_PROFILE_2_SLICE_GFX    = gonvml.GPU_INSTANCE_PROFILE_2_SLICE_GFX
	GPU_INSTANCE_PROFILE_4_SLICE_GFX    = gonvml.GPU_INSTANCE_PROFILE_4_SLICE_GFX
	GPU_INSTANCE_PROFILE_1_SLICE_NO_ME  = gonvml.GPU_INSTANCE_PROFILE_1_SLICE_NO_ME
	GPU_INSTANCE_PROFILE_2_SLICE_NO_ME  = gonvml.GPU_INSTANCE_PROFILE_2_SLICE_NO_ME
	GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME = gonvml.GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME
	GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME = gonvml.GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME
	GPU_INSTANCE_PROFILE_3_SLICE_GFX    = gonvml.GPU_INSTANCE_PROFILE_3_SLICE_GFX
	GPU_INSTANCE_PROFILE_COUNT          = gonvml.GPU_INSTANCE_PROFILE_COUNT
)

// Compute instance profile selectors for GpuInstance.GetComputeInstanceProfileInfo.
const (
	COMPUTE_INSTANCE_PROFILE_1_SLICE       = gonvml.COMPUTE_INSTANCE_PROFILE_1_SLICE
	COMPUTE_INSTANCE_PROFILE_2_SLICE       = gonvml.COMPUTE_INSTANCE_PROFILE_2_SLICE
	COMPUTE_INSTANCE_PROFILE_3_SLICE       = gonvml.COMPUTE_INSTANCE_PROFILE_3_SLICE
	COMPUTE_INSTANCE_PROFILE_4_SLICE       = gonvml.COMPUTE_INSTANCE_PROFILE_4_SLICE
	COMPUTE_INSTANCE_PROFILE_7_SLICE       = gonvml.COMPUTE_INSTANCE_PROFILE_7_SLICE
	COMPUTE_INSTANCE_PROFILE_8_SLICE       = gonvml.COMPUTE_INSTANCE_PROFILE_8_SLICE
	COMPUTE_INSTANCE_PROFILE_6_SLICE       = gonvml.COMPUTE_INSTANCE_PROFILE_6_SLICE
	COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1  = gonvml.COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1
	COMPUTE_INSTANCE_PROFILE_COUNT         = gonvml.COMPUTE_INSTANCE_PROFILE_COUNT
	COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED = gonvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED
)

// Brands, architectures, compute and addressing modes.
const (
	BRAND_TESLA  = gonvml.BRAND_TESLA
	BRAND_NVIDIA = gonvml.BRAND_NVIDIA

	DEVICE_ARCH_AMPERE    = gonvml.DEVICE_ARCH_AMPERE
	DEVICE_ARCH_ADA       = gonvml.DEVICE_ARCH_ADA
	DEVICE_ARCH_HOPPER    = gonvml.DEVICE_ARCH_HOPPER
	DEVICE_ARCH_BLACKWELL = gonvml.DEVICE_ARCH_BLACKWELL
	DEVICE_ARCH_UNKNOWN   = gonvml.DEVICE_ARCH_UNKNOWN

	COMPUTEMODE_DEFAULT           = gonvml.COMPUTEMODE_DEFAULT
	COMPUTEMODE_PROHIBITED        = gonvml.COMPUTEMODE_PROHIBITED
	COMPUTEMODE_EXCLUSIVE_PROCESS = gonvml.COMPUTEMODE_EXCLUSIVE_PROCESS

	DEVICE_ADDRESSING_MODE_NONE = gonvml.DEVICE_ADDRESSING_MODE_NONE
	DEVICE_ADDRESSING_MODE_HMM  = gonvml.DEVICE_ADDRESSING_MODE_HMM
	DEVICE_ADDRESSING_MODE_ATS  = gonvml.DEVICE_ADDRESSING_MODE_ATS
)

// NoInstanceID is what EventData.GpuInstanceId and ComputeInstanceId hold when
// an event is not tied to a MIG instance (0xFFFFFFFF, as the driver reports).
const NoInstanceID = ^uint32(0)
