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

// Interface is the library-level subset of go-nvml's nvml.Interface that our
// components use. Init must succeed before any other call; Shutdown releases
// the library. Implementations are safe for concurrent use.
type Interface interface {
	Init() Return
	Shutdown() Return
	ErrorString(r Return) string

	// SystemGetDriverVersion returns the kernel driver version ("580.65.06").
	SystemGetDriverVersion() (string, Return)
	// SystemGetCudaDriverVersion returns the CUDA driver API version as
	// 1000*major + 10*minor (12090 for 12.9).
	SystemGetCudaDriverVersion() (int, Return)

	DeviceGetCount() (int, Return)
	DeviceGetHandleByIndex(index int) (Device, Return)
	DeviceGetHandleByUUID(uuid string) (Device, Return)

	// EventSetCreate creates an event set; register devices on it with
	// Device.RegisterEvents and read it with EventSet.Wait.
	EventSetCreate() (EventSet, Return)
}

// Device is the subset of go-nvml's nvml.Device that we use. A Device is
// either a full GPU or a MIG device (IsMigDeviceHandle reports which); calls
// that make no sense for the kind at hand return ERROR_NOT_SUPPORTED or
// ERROR_INVALID_ARGUMENT as the driver does. Once a GPU has fallen off the
// bus, calls on it (and on its MIG devices) return ERROR_GPU_IS_LOST; the mock
// keeps answering the identity calls (GetUUID, GetIndex, GetMinorNumber,
// GetPciInfo) so that the Xid 79 event can be attributed to its GPU, and
// consumers must not rely on more than that.
type Device interface {
	// Identity.
	GetUUID() (string, Return)
	GetIndex() (int, Return)
	GetMinorNumber() (int, Return)
	GetPciInfo() (PciInfo, Return)
	GetNumaNodeId() (int, Return)

	// Product facts.
	GetName() (string, Return)
	GetBrand() (BrandType, Return)
	GetArchitecture() (DeviceArchitecture, Return)
	GetCudaComputeCapability() (major int, minor int, r Return)
	GetMemoryInfo() (Memory, Return)
	GetAddressingMode() (DeviceAddressingMode, Return)

	// Sharing.
	GetComputeMode() (ComputeMode, Return)
	SetComputeMode(mode ComputeMode) Return
	// SetTimeSlice sets the compute time slice of a full GPU. Not part of
	// NVML: the real implementation runs nvidia-smi compute-policy.
	SetTimeSlice(slice TimeSlice) Return

	// NVLink fabric (multi-node NVLink: GB200/GB300 NVL72).
	GetGpuFabricInfo() (GpuFabricInfo, Return)

	// MIG, on a full GPU.
	GetMigMode() (current int, pending int, r Return)
	GetMaxMigDeviceCount() (int, Return)
	GetMigDeviceHandleByIndex(index int) (Device, Return)
	GetGpuInstanceProfileInfo(profile int) (GpuInstanceProfileInfo, Return)
	GetGpuInstancePossiblePlacements(info *GpuInstanceProfileInfo) ([]GpuInstancePlacement, Return)
	GetGpuInstanceRemainingCapacity(info *GpuInstanceProfileInfo) (int, Return)
	GetGpuInstances(info *GpuInstanceProfileInfo) ([]GpuInstance, Return)
	GetGpuInstanceById(id int) (GpuInstance, Return)
	CreateGpuInstanceWithPlacement(info *GpuInstanceProfileInfo, placement *GpuInstancePlacement) (GpuInstance, Return)

	// MIG, on a MIG device.
	IsMigDeviceHandle() (bool, Return)
	GetDeviceHandleFromMigDeviceHandle() (Device, Return)
	GetGpuInstanceId() (int, Return)
	GetComputeInstanceId() (int, Return)
	// GetAttributes returns engine counts, slice counts and memory of a MIG
	// device.
	GetAttributes() (DeviceAttributes, Return)

	// Health events.
	GetSupportedEventTypes() (uint64, Return)
	RegisterEvents(eventTypes uint64, set EventSet) Return
}

// GpuInstance is the subset of go-nvml's nvml.GpuInstance that we use.
type GpuInstance interface {
	GetInfo() (GpuInstanceInfo, Return)
	GetComputeInstanceProfileInfo(profile int, engProfile int) (ComputeInstanceProfileInfo, Return)
	GetComputeInstanceRemainingCapacity(info *ComputeInstanceProfileInfo) (int, Return)
	CreateComputeInstance(info *ComputeInstanceProfileInfo) (ComputeInstance, Return)
	GetComputeInstances(info *ComputeInstanceProfileInfo) ([]ComputeInstance, Return)
	GetComputeInstanceById(id int) (ComputeInstance, Return)
	// Destroy fails with ERROR_IN_USE while compute instances exist.
	Destroy() Return
}

// ComputeInstance is the subset of go-nvml's nvml.ComputeInstance that we use.
type ComputeInstance interface {
	GetInfo() (ComputeInstanceInfo, Return)
	Destroy() Return
}

// GpuInstanceInfo mirrors go-nvml's GpuInstanceInfo with our Device type.
type GpuInstanceInfo struct {
	// Device is the parent (full) GPU.
	Device    Device
	Id        uint32
	ProfileId uint32
	Placement GpuInstancePlacement
}

// ComputeInstanceInfo mirrors go-nvml's ComputeInstanceInfo with our types.
type ComputeInstanceInfo struct {
	// Device is the parent (full) GPU.
	Device      Device
	GpuInstance GpuInstance
	Id          uint32
	ProfileId   uint32
	Placement   ComputeInstancePlacement
}

// EventSet is the subset of go-nvml's nvml.EventSet that we use.
type EventSet interface {
	// Wait blocks up to timeoutMs milliseconds for the next event and returns
	// ERROR_TIMEOUT when none came. An Xid event has EventType
	// EventTypeXidCriticalError and the Xid number in EventData.
	Wait(timeoutMs uint32) (EventData, Return)
	Free() Return
}

// EventData mirrors go-nvml's EventData with our Device type.
type EventData struct {
	// Device is the full GPU the event is about.
	Device    Device
	EventType uint64
	// EventData is the Xid number for Xid events.
	EventData uint64
	// GpuInstanceId and ComputeInstanceId name the MIG instance the event is
	// attributed to, or NoInstanceID.
	GpuInstanceId     uint32
	ComputeInstanceId uint32
}

// TimeSlice is the compute time slice of a GPU shared by time slicing, with
// the values nvidia-smi compute-policy --set-timeslice takes.
type TimeSlice int

// Time slices, matching the GpuConfig timeSlicingConfig.interval names.
const (
	TimeSliceDefault TimeSlice = 0
	TimeSliceShort   TimeSlice = 1
	TimeSliceMedium  TimeSlice = 2
	TimeSliceLong    TimeSlice = 3
)

// String returns the GpuConfig name of the time slice.
func (t TimeSlice) String() string {
	switch t {
	case TimeSliceDefault:
		return "Default"
	case TimeSliceShort:
		return "Short"
	case TimeSliceMedium:
		return "Medium"
	case TimeSliceLong:
		return "Long"
	}
	return "Unknown"
}
