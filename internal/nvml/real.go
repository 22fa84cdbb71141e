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
	"fmt"
	"os/exec"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// RealOptions configure the go-nvml backed implementation.
type RealOptions struct {
	// LibraryPath is the libnvidia-ml.so to dlopen; empty means the
	// default search ("libnvidia-ml.so.1").
	LibraryPath string
	// NvidiaSMIPath is the nvidia-smi binary used by SetTimeSlice; empty
	// means "nvidia-smi" from PATH.
	NvidiaSMIPath string
	// RunCommand runs an external command and returns its combined output;
	// nil means os/exec with a 30 s timeout. Tests inject a fake.
	RunCommand func(name string, args ...string) ([]byte, error)
}

// NewReal returns an Interface backed by go-nvml. It dlopens the driver's
// libnvidia-ml at Init, so it builds and starts everywhere, and Init returns
// ERROR_LIBRARY_NOT_FOUND on a machine without the NVIDIA driver.
func NewReal(opts RealOptions) Interface {
	var libOpts []gonvml.LibraryOption
	if opts.LibraryPath != "" {
		libOpts = append(libOpts, gonvml.WithLibraryPath(opts.LibraryPath))
	}
	if opts.NvidiaSMIPath == "" {
		opts.NvidiaSMIPath = "nvidia-smi"
	}
	if opts.RunCommand == nil {
		opts.RunCommand = runCommand
	}
	return &realLib{lib: gonvml.New(libOpts...), opts: opts}
}

func runCommand(name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, name, args...).CombinedOutput()
}

type realLib struct {
	lib  gonvml.Interface
	opts RealOptions
}

var _ Interface = (*realLib)(nil)

func (l *realLib) Init() Return                  { return l.lib.Init() }
func (l *realLib) Shutdown() Return              { return l.lib.Shutdown() }
func (l *realLib) ErrorString(r Return) string   { return l.lib.ErrorString(r) }
func (l *realLib) DeviceGetCount() (int, Return) { return l.lib.DeviceGetCount() }

func (l *realLib) SystemGetDriverVersion() (string, Return) {
	return l.lib.SystemGetDriverVersion()
}

func (l *realLib) SystemGetCudaDriverVersion() (int, Return) {
	return l.lib.SystemGetCudaDriverVersion()
}

func (l *realLib) DeviceGetHandleByIndex(index int) (Device, Return) {
	d, r := l.lib.DeviceGetHandleByIndex(index)
	return l.wrapDevice(d, r)
}

func (l *realLib) DeviceGetHandleByUUID(uuid string) (Device, Return) {
	d, r := l.lib.DeviceGetHandleByUUID(uuid)
	return l.wrapDevice(d, r)
}

func (l *realLib) EventSetCreate() (EventSet, Return) {
	s, r := l.lib.EventSetCreate()
	if r != SUCCESS {
		return nil, r
	}
	return &realEventSet{set: s, lib: l}, SUCCESS
}

func (l *realLib) wrapDevice(d gonvml.Device, r Return) (Device, Return) {
	if r != SUCCESS || d == nil {
		return nil, r
	}
	return &realDevice{dev: d, lib: l}, SUCCESS
}

type realDevice struct {
	dev gonvml.Device
	lib *realLib
}

var _ Device = (*realDevice)(nil)

func (d *realDevice) GetUUID() (string, Return)       { return d.dev.GetUUID() }
func (d *realDevice) GetIndex() (int, Return)         { return d.dev.GetIndex() }
func (d *realDevice) GetMinorNumber() (int, Return)   { return d.dev.GetMinorNumber() }
func (d *realDevice) GetPciInfo() (PciInfo, Return)   { return d.dev.GetPciInfo() }
func (d *realDevice) GetNumaNodeId() (int, Return)    { return d.dev.GetNumaNodeId() }
func (d *realDevice) GetName() (string, Return)       { return d.dev.GetName() }
func (d *realDevice) GetBrand() (BrandType, Return)   { return d.dev.GetBrand() }
func (d *realDevice) GetMemoryInfo() (Memory, Return) { return d.dev.GetMemoryInfo() }
func (d *realDevice) GetMigMode() (int, int, Return)  { return d.dev.GetMigMode() }
func (d *realDevice) GetMaxMigDeviceCount() (int, Return) {
	return d.dev.GetMaxMigDeviceCount()
}
func (d *realDevice) IsMigDeviceHandle() (bool, Return)         { return d.dev.IsMigDeviceHandle() }
func (d *realDevice) GetGpuInstanceId() (int, Return)           { return d.dev.GetGpuInstanceId() }
func (d *realDevice) GetComputeInstanceId() (int, Return)       { return d.dev.GetComputeInstanceId() }
func (d *realDevice) GetAttributes() (DeviceAttributes, Return) { return d.dev.GetAttributes() }
func (d *realDevice) GetComputeMode() (ComputeMode, Return)     { return d.dev.GetComputeMode() }
func (d *realDevice) SetComputeMode(m ComputeMode) Return       { return d.dev.SetComputeMode(m) }
func (d *realDevice) GetSupportedEventTypes() (uint64, Return) {
	return d.dev.GetSupportedEventTypes()
}

func (d *realDevice) GetArchitecture() (DeviceArchitecture, Return) {
	return d.dev.GetArchitecture()
}

func (d *realDevice) GetCudaComputeCapability() (int, int, Return) {
	return d.dev.GetCudaComputeCapability()
}

func (d *realDevice) GetAddressingMode() (DeviceAddressingMode, Return) {
	return d.dev.GetAddressingMode()
}

// SetTimeSlice runs "nvidia-smi compute-policy -i <uuid> --set-timeslice=<n>",
// as NVML has no call for it.
func (d *realDevice) SetTimeSlice(slice TimeSlice) Return {
	if slice < TimeSliceDefault || slice > TimeSliceLong {
		return ERROR_INVALID_ARGUMENT
	}
	uuid, r := d.dev.GetUUID()
	if r != SUCCESS {
		return r
	}
	_, err := d.lib.opts.RunCommand(d.lib.opts.NvidiaSMIPath, "compute-policy", "-i", uuid, fmt.Sprintf("--set-timeslice=%d", int(slice)))
	if err != nil {
		return ERROR_UNKNOWN
	}
	return SUCCESS
}

// GetGpuFabricInfo reads fabric info version 3 and falls back to version 1
// (no health mask) on drivers that do not know version 3.
func (d *realDevice) GetGpuFabricInfo() (GpuFabricInfo, Return) {
	info, r := d.dev.GetGpuFabricInfoV().V3()
	if r != gonvml.ERROR_ARGUMENT_VERSION_MISMATCH && r != gonvml.ERROR_FUNCTION_NOT_FOUND {
		return info, r
	}
	v1, r := d.dev.GetGpuFabricInfo()
	if r != SUCCESS {
		return GpuFabricInfo{}, r
	}
	return GpuFabricInfo{
		ClusterUuid: v1.ClusterUuid,
		Status:      v1.Status,
		CliqueId:    v1.CliqueId,
		State:       v1.State,
	}, SUCCESS
}

func (d *realDevice) GetMigDeviceHandleByIndex(index int) (Device, Return) {
	m, r := d.dev.GetMigDeviceHandleByIndex(index)
	return d.lib.wrapDevice(m, r)
}

func (d *realDevice) GetDeviceHandleFromMigDeviceHandle() (Device, Return) {
	p, r := d.dev.GetDeviceHandleFromMigDeviceHandle()
	return d.lib.wrapDevice(p, r)
}

func (d *realDevice) GetGpuInstanceProfileInfo(profile int) (GpuInstanceProfileInfo, Return) {
	return d.dev.GetGpuInstanceProfileInfo(profile)
}

func (d *realDevice) GetGpuInstancePossiblePlacements(info *GpuInstanceProfileInfo) ([]GpuInstancePlacement, Return) {
	return d.dev.GetGpuInstancePossiblePlacements(info)
}

func (d *realDevice) GetGpuInstanceRemainingCapacity(info *GpuInstanceProfileInfo) (int, Return) {
	return d.dev.GetGpuInstanceRemainingCapacity(info)
}

func (d *realDevice) GetGpuInstances(info *GpuInstanceProfileInfo) ([]GpuInstance, Return) {
	gis, r := d.dev.GetGpuInstances(info)
	if r != SUCCESS {
		return nil, r
	}
	out := make([]GpuInstance, 0, len(gis))
	for _, gi := range gis {
		out = append(out, &realGpuInstance{gi: gi, lib: d.lib})
	}
	return out, SUCCESS
}

func (d *realDevice) GetGpuInstanceById(id int) (GpuInstance, Return) {
	gi, r := d.dev.GetGpuInstanceById(id)
	if r != SUCCESS {
		return nil, r
	}
	return &realGpuInstance{gi: gi, lib: d.lib}, SUCCESS
}

func (d *realDevice) CreateGpuInstanceWithPlacement(info *GpuInstanceProfileInfo, placement *GpuInstancePlacement) (GpuInstance, Return) {
	gi, r := d.dev.CreateGpuInstanceWithPlacement(info, placement)
	if r != SUCCESS {
		return nil, r
	}
	return &realGpuInstance{gi: gi, lib: d.lib}, SUCCESS
}

func (d *realDevice) RegisterEvents(eventTypes uint64, set EventSet) Return {
	rs, ok := set.(*realEventSet)
	if !ok {
		return ERROR_INVALID_ARGUMENT
	}
	return d.dev.RegisterEvents(eventTypes, rs.set)
}

type realGpuInstance struct {
	gi  gonvml.GpuInstance
	lib *realLib
}

var _ GpuInstance = (*realGpuInstance)(nil)

func (g *realGpuInstance) GetInfo() (GpuInstanceInfo, Return) {
	info, r := g.gi.GetInfo()
	if r != SUCCESS {
		return GpuInstanceInfo{}, r
	}
	parent, _ := g.lib.wrapDevice(info.Device, SUCCESS)
	return GpuInstanceInfo{Device: parent, Id: info.Id, ProfileId: info.ProfileId, Placement: info.Placement}, SUCCESS
}

func (g *realGpuInstance) GetComputeInstanceProfileInfo(profile, engProfile int) (ComputeInstanceProfileInfo, Return) {
	return g.gi.GetComputeInstanceProfileInfo(profile, engProfile)
}

func (g *realGpuInstance) GetComputeInstanceRemainingCapacity(info *ComputeInstanceProfileInfo) (int, Return) {
	return g.gi.GetComputeInstanceRemainingCapacity(info)
}

func (g *realGpuInstance) CreateComputeInstance(info *ComputeInstanceProfileInfo) (ComputeInstance, Return) {
	ci, r := g.gi.CreateComputeInstance(info)
	if r != SUCCESS {
		return nil, r
	}
	return &realComputeInstance{ci: ci, lib: g.lib}, SUCCESS
}

func (g *realGpuInstance) GetComputeInstances(info *ComputeInstanceProfileInfo) ([]ComputeInstance, Return) {
	cis, r := g.gi.GetComputeInstances(info)
	if r != SUCCESS {
		return nil, r
	}
	out := make([]ComputeInstance, 0, len(cis))
	for _, ci := range cis {
		out = append(out, &realComputeInstance{ci: ci, lib: g.lib})
	}
	return out, SUCCESS
}

func (g *realGpuInstance) GetComputeInstanceById(id int) (ComputeInstance, Return) {
	ci, r := g.gi.GetComputeInstanceById(id)
	if r != SUCCESS {
		return nil, r
	}
	return &realComputeInstance{ci: ci, lib: g.lib}, SUCCESS
}

func (g *realGpuInstance) Destroy() Return { return g.gi.Destroy() }

type realComputeInstance struct {
	ci  gonvml.ComputeInstance
	lib *realLib
}

var _ ComputeInstance = (*realComputeInstance)(nil)

func (c *realComputeInstance) GetInfo() (ComputeInstanceInfo, Return) {
	info, r := c.ci.GetInfo()
	if r != SUCCESS {
		return ComputeInstanceInfo{}, r
	}
	parent, _ := c.lib.wrapDevice(info.Device, SUCCESS)
	var gi GpuInstance
	if info.GpuInstance != nil {
		gi = &realGpuInstance{gi: info.GpuInstance, lib: c.lib}
	}
	return ComputeInstanceInfo{Device: parent, GpuInstance: gi, Id: info.Id, ProfileId: info.ProfileId, Placement: info.Placement}, SUCCESS
}

func (c *realComputeInstance) Destroy() Return { return c.ci.Destroy() }

type realEventSet struct {
	set gonvml.EventSet
	lib *realLib
}

var _ EventSet = (*realEventSet)(nil)

func (s *realEventSet) Wait(timeoutMs uint32) (EventData, Return) {
	e, r := s.set.Wait(timeoutMs)
	if r != SUCCESS {
		return EventData{}, r
	}
	dev, _ := s.lib.wrapDevice(e.Device, SUCCESS)
	return EventData{
		Device:            dev,
		EventType:         e.EventType,
		EventData:         e.EventData,
		GpuInstanceId:     e.GpuInstanceId,
		ComputeInstanceId: e.ComputeInstanceId,
	}, SUCCESS
}

func (s *realEventSet) Free() Return { return s.set.Free() }
