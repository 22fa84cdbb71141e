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
	"sort"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// device is a handle to a full GPU (ci == nil) or to a MIG device (the
// compute instance ci of one of the GPU's GPU instances).
type device struct {
	gpu *gpu
	ci  *computeInstance
}

var _ nvml.Device = (*device)(nil)

// lock takes the Lib lock and runs the common checks: initialized, GPU not
// lost, MIG device still existing. The caller must unlock when r is SUCCESS
// or not: unlock is always returned.
func (d *device) lock() (unlock func(), r nvml.Return) {
	unlock, r = d.lockIdentity()
	if r == nvml.SUCCESS && d.gpu.lost {
		r = nvml.ERROR_GPU_IS_LOST
	}
	return unlock, r
}

// lockIdentity is lock for the identity calls (UUID, index, minor, PCI
// info), which keep answering on a lost GPU so that a health checker can
// attribute the Xid 79 event to its GPU.
func (d *device) lockIdentity() (unlock func(), r nvml.Return) {
	m := d.gpu.lib
	m.mu.Lock()
	unlock = m.mu.Unlock
	if r := m.initialized(); r != nvml.SUCCESS {
		return unlock, r
	}
	if d.ci != nil && (d.ci.destroyed || d.ci.gi.destroyed) {
		return unlock, nvml.ERROR_INVALID_ARGUMENT
	}
	return unlock, nvml.SUCCESS
}

// fullIdentity is lockIdentity for identity calls that only a full GPU answers.
func (d *device) fullIdentity() (func(), nvml.Return) {
	unlock, r := d.lockIdentity()
	if r == nvml.SUCCESS && d.ci != nil {
		r = nvml.ERROR_NOT_SUPPORTED
	}
	return unlock, r
}

// full is lock for calls that only a full GPU answers.
func (d *device) full() (func(), nvml.Return) {
	unlock, r := d.lock()
	if r == nvml.SUCCESS && d.ci != nil {
		r = nvml.ERROR_NOT_SUPPORTED
	}
	return unlock, r
}

// migCapable is full for MIG calls: the GPU must have a MIG table.
func (d *device) migCapable() (func(), nvml.Return) {
	unlock, r := d.full()
	if r == nvml.SUCCESS && d.gpu.mig == nil {
		r = nvml.ERROR_NOT_SUPPORTED
	}
	return unlock, r
}

func (d *device) GetUUID() (string, nvml.Return) {
	unlock, r := d.lockIdentity()
	defer unlock()
	if r != nvml.SUCCESS {
		return "", r
	}
	if d.ci != nil {
		return d.ci.uuid, nvml.SUCCESS
	}
	return d.gpu.uuid, nvml.SUCCESS
}

// GetIndex is the GPU's place among the GPUs NVML enumerates (those bound
// to the nvidia driver), as with the real library.
func (d *device) GetIndex() (int, nvml.Return) {
	unlock, r := d.fullIdentity()
	defer unlock()
	if r != nvml.SUCCESS {
		return 0, r
	}
	for i, g := range d.gpu.lib.visibleGPUs() {
		if g == d.gpu {
			return i, nvml.SUCCESS
		}
	}
	return 0, nvml.ERROR_GPU_IS_LOST
}

func (d *device) GetMinorNumber() (int, nvml.Return) {
	unlock, r := d.fullIdentity()
	defer unlock()
	if r != nvml.SUCCESS {
		return 0, r
	}
	return d.gpu.index, nvml.SUCCESS
}

func (d *device) GetPciInfo() (nvml.PciInfo, nvml.Return) {
	unlock, r := d.lockIdentity()
	defer unlock()
	if r != nvml.SUCCESS {
		return nvml.PciInfo{}, r
	}
	var info nvml.PciInfo
	for i, c := range []byte(d.gpu.busID) {
		info.BusId[i] = int8(c)
	}
	var domain, bus, dev, fn uint32
	_, _ = sscanBusID(d.gpu.busID, &domain, &bus, &dev, &fn)
	info.Domain, info.Bus, info.Device = domain, bus, dev
	return info, nvml.SUCCESS
}

func (d *device) GetNumaNodeId() (int, nvml.Return) {
	unlock, r := d.lock()
	defer unlock()
	if r != nvml.SUCCESS {
		return 0, r
	}
	if d.gpu.numa < 0 {
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	return d.gpu.numa, nvml.SUCCESS
}

func (d *device) GetName() (string, nvml.Return) {
	unlock, r := d.lock()
	defer unlock()
	if r != nvml.SUCCESS {
		return "", r
	}
	name := d.gpu.lib.profile.GPU.ProductName
	if d.ci != nil {
		name += " MIG " + d.ci.profileName()
	}
	return name, nvml.SUCCESS
}

func (d *device) GetBrand() (nvml.BrandType, nvml.Return) {
	unlock, r := d.lock()
	defer unlock()
	if r != nvml.SUCCESS {
		return 0, r
	}
	return brands[d.gpu.lib.profile.GPU.Brand], nvml.SUCCESS
}

func (d *device) GetArchitecture() (nvml.DeviceArchitecture, nvml.Return) {
	unlock, r := d.lock()
	defer unlock()
	if r != nvml.SUCCESS {
		return 0, r
	}
	return architectures[d.gpu.lib.profile.GPU.Architecture], nvml.SUCCESS
}

func (d *device) GetCudaComputeCapability() (int, int, nvml.Return) {
	unlock, r := d.lock()
	defer unlock()
	if r != nvml.SUCCESS {
		return 0, 0, r
	}
	v, _ := parseMajorMinor(d.gpu.lib.profile.GPU.CUDAComputeCapability)
	return v / 1000, (v % 1000) / 10, nvml.SUCCESS
}

func (d *device) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	unlock, r := d.lock()
	defer unlock()
	if r != nvml.SUCCESS {
		return nvml.Memory{}, r
	}
	total := d.gpu.lib.profile.GPU.MemoryMiB * mib
	if d.ci != nil {
		total = d.ci.gi.profile.MemoryMiB * mib
	}
	return nvml.Memory{Total: total, Free: total}, nvml.SUCCESS
}

func (d *device) GetAddressingMode() (nvml.DeviceAddressingMode, nvml.Return) {
	unlock, r := d.lock()
	defer unlock()
	if r != nvml.SUCCESS {
		return nvml.DeviceAddressingMode{}, r
	}
	return nvml.DeviceAddressingMode{Version: 1, Value: uint32(addressingModes[d.gpu.lib.profile.GPU.AddressingMode])}, nvml.SUCCESS
}

func (d *device) GetComputeMode() (nvml.ComputeMode, nvml.Return) {
	unlock, r := d.full()
	defer unlock()
	if r != nvml.SUCCESS {
		return 0, r
	}
	return d.gpu.computeMode, nvml.SUCCESS
}

func (d *device) SetComputeMode(mode nvml.ComputeMode) nvml.Return {
	unlock, r := d.full()
	defer unlock()
	if r != nvml.SUCCESS {
		return r
	}
	switch mode {
	case nvml.COMPUTEMODE_DEFAULT, nvml.COMPUTEMODE_PROHIBITED, nvml.COMPUTEMODE_EXCLUSIVE_PROCESS:
	default:
		return nvml.ERROR_INVALID_ARGUMENT
	}
	d.gpu.computeMode = mode
	return d.gpu.lib.persistLocked()
}

func (d *device) SetTimeSlice(slice nvml.TimeSlice) nvml.Return {
	unlock, r := d.full()
	defer unlock()
	if r != nvml.SUCCESS {
		return r
	}
	if slice < nvml.TimeSliceDefault || slice > nvml.TimeSliceLong {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	d.gpu.timeSlice = slice
	return d.gpu.lib.persistLocked()
}

func (d *device) GetGpuFabricInfo() (nvml.GpuFabricInfo, nvml.Return) {
	unlock, r := d.full()
	defer unlock()
	if r != nvml.SUCCESS {
		return nvml.GpuFabricInfo{}, r
	}
	if d.gpu.lib.profile.Fabric == nil {
		return nvml.GpuFabricInfo{}, nvml.ERROR_NOT_SUPPORTED
	}
	info := d.gpu.fabric
	info.Version = 3
	return info, nvml.SUCCESS
}

func (d *device) GetMigMode() (int, int, nvml.Return) {
	unlock, r := d.migCapable()
	defer unlock()
	if r != nvml.SUCCESS {
		return 0, 0, r
	}
	return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS
}

func (d *device) GetMaxMigDeviceCount() (int, nvml.Return) {
	unlock, r := d.migCapable()
	defer unlock()
	if r != nvml.SUCCESS {
		return 0, r
	}
	return d.gpu.lib.profile.MIG.MaxDevices, nvml.SUCCESS
}

func (d *device) GetMigDeviceHandleByIndex(index int) (nvml.Device, nvml.Return) {
	unlock, r := d.migCapable()
	defer unlock()
	if r != nvml.SUCCESS {
		return nil, r
	}
	if index < 0 || index >= d.gpu.lib.profile.MIG.MaxDevices {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	devs := d.gpu.migDevices()
	if index >= len(devs) {
		return nil, nvml.ERROR_NOT_FOUND
	}
	return &device{gpu: d.gpu, ci: devs[index]}, nvml.SUCCESS
}

func (d *device) GetGpuInstanceProfileInfo(profile int) (nvml.GpuInstanceProfileInfo, nvml.Return) {
	unlock, r := d.migCapable()
	defer unlock()
	if r != nvml.SUCCESS {
		return nvml.GpuInstanceProfileInfo{}, r
	}
	if profile < 0 || profile >= nvml.GPU_INSTANCE_PROFILE_COUNT {
		return nvml.GpuInstanceProfileInfo{}, nvml.ERROR_INVALID_ARGUMENT
	}
	mp := d.gpu.migProfileBySelector(profile)
	if mp == nil {
		return nvml.GpuInstanceProfileInfo{}, nvml.ERROR_NOT_SUPPORTED
	}
	return giProfileInfo(mp), nvml.SUCCESS
}

// profileOf resolves the profile an info passed by a caller refers to.
func (d *device) profileOf(info *nvml.GpuInstanceProfileInfo) (*MIGProfileSpec, nvml.Return) {
	if info == nil {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	mp := d.gpu.migProfileByID(info.Id)
	if mp == nil {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	return mp, nvml.SUCCESS
}

func (d *device) GetGpuInstancePossiblePlacements(info *nvml.GpuInstanceProfileInfo) ([]nvml.GpuInstancePlacement, nvml.Return) {
	unlock, r := d.migCapable()
	defer unlock()
	if r != nvml.SUCCESS {
		return nil, r
	}
	mp, r := d.profileOf(info)
	if r != nvml.SUCCESS {
		return nil, r
	}
	out := make([]nvml.GpuInstancePlacement, 0, len(mp.Placements))
	for _, s := range mp.Placements {
		out = append(out, nvml.GpuInstancePlacement{Start: s, Size: mp.PlacementSize})
	}
	return out, nvml.SUCCESS
}

func (d *device) GetGpuInstanceRemainingCapacity(info *nvml.GpuInstanceProfileInfo) (int, nvml.Return) {
	unlock, r := d.migCapable()
	defer unlock()
	if r != nvml.SUCCESS {
		return 0, r
	}
	mp, r := d.profileOf(info)
	if r != nvml.SUCCESS {
		return 0, r
	}
	return d.gpu.mig.remaining(mp), nvml.SUCCESS
}

func (d *device) GetGpuInstances(info *nvml.GpuInstanceProfileInfo) ([]nvml.GpuInstance, nvml.Return) {
	unlock, r := d.migCapable()
	defer unlock()
	if r != nvml.SUCCESS {
		return nil, r
	}
	mp, r := d.profileOf(info)
	if r != nvml.SUCCESS {
		return nil, r
	}
	var gis []*gpuInstance
	for _, gi := range d.gpu.gis {
		if gi.profile.ID == mp.ID {
			gis = append(gis, gi)
		}
	}
	sort.Slice(gis, func(i, j int) bool { return gis[i].id < gis[j].id })
	out := make([]nvml.GpuInstance, 0, len(gis))
	for _, gi := range gis {
		out = append(out, gi)
	}
	return out, nvml.SUCCESS
}

func (d *device) GetGpuInstanceById(id int) (nvml.GpuInstance, nvml.Return) {
	unlock, r := d.migCapable()
	defer unlock()
	if r != nvml.SUCCESS {
		return nil, r
	}
	gi, ok := d.gpu.gis[uint32(id)]
	if !ok || id < 0 {
		return nil, nvml.ERROR_NOT_FOUND
	}
	return gi, nvml.SUCCESS
}

func (d *device) CreateGpuInstanceWithPlacement(info *nvml.GpuInstanceProfileInfo, placement *nvml.GpuInstancePlacement) (nvml.GpuInstance, nvml.Return) {
	unlock, r := d.migCapable()
	defer unlock()
	if r != nvml.SUCCESS {
		return nil, r
	}
	mp, r := d.profileOf(info)
	if r != nvml.SUCCESS {
		return nil, r
	}
	if placement == nil || placement.Size != mp.PlacementSize {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	gi, r := d.gpu.createGI(mp, placement.Start)
	if r != nvml.SUCCESS {
		return nil, r
	}
	if r := d.gpu.lib.persistLocked(); r != nvml.SUCCESS {
		return nil, r
	}
	return gi, nvml.SUCCESS
}

func (d *device) IsMigDeviceHandle() (bool, nvml.Return) {
	unlock, r := d.lock()
	defer unlock()
	if r != nvml.SUCCESS {
		return false, r
	}
	return d.ci != nil, nvml.SUCCESS
}

func (d *device) GetDeviceHandleFromMigDeviceHandle() (nvml.Device, nvml.Return) {
	unlock, r := d.lock()
	defer unlock()
	if r != nvml.SUCCESS {
		return nil, r
	}
	if d.ci == nil {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	return &device{gpu: d.gpu}, nvml.SUCCESS
}

func (d *device) GetGpuInstanceId() (int, nvml.Return) {
	unlock, r := d.lock()
	defer unlock()
	if r != nvml.SUCCESS {
		return 0, r
	}
	if d.ci == nil {
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	return int(d.ci.gi.id), nvml.SUCCESS
}

func (d *device) GetComputeInstanceId() (int, nvml.Return) {
	unlock, r := d.lock()
	defer unlock()
	if r != nvml.SUCCESS {
		return 0, r
	}
	if d.ci == nil {
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	return int(d.ci.id), nvml.SUCCESS
}

func (d *device) GetAttributes() (nvml.DeviceAttributes, nvml.Return) {
	unlock, r := d.lock()
	defer unlock()
	if r != nvml.SUCCESS {
		return nvml.DeviceAttributes{}, r
	}
	if d.ci == nil {
		return nvml.DeviceAttributes{}, nvml.ERROR_NOT_SUPPORTED
	}
	gp := d.ci.gi.profile
	return nvml.DeviceAttributes{
		MultiprocessorCount:       gp.Multiprocessors * d.ci.slices / gp.Slices,
		SharedCopyEngineCount:     gp.CopyEngines,
		SharedDecoderCount:        gp.Decoders,
		SharedEncoderCount:        gp.Encoders,
		SharedJpegCount:           gp.JPEGEngines,
		SharedOfaCount:            gp.OFAEngines,
		GpuInstanceSliceCount:     gp.Slices,
		ComputeInstanceSliceCount: d.ci.slices,
		MemorySizeMB:              gp.MemoryMiB,
	}, nvml.SUCCESS
}

// supportedEvents are the event types the mock delivers.
const supportedEvents = nvml.EventTypeXidCriticalError | nvml.EventTypeSingleBitEccError | nvml.EventTypeDoubleBitEccError

func (d *device) GetSupportedEventTypes() (uint64, nvml.Return) {
	unlock, r := d.full()
	defer unlock()
	if r != nvml.SUCCESS {
		return 0, r
	}
	return supportedEvents, nvml.SUCCESS
}

func (d *device) RegisterEvents(eventTypes uint64, set nvml.EventSet) nvml.Return {
	unlock, r := d.full()
	defer unlock()
	if r != nvml.SUCCESS {
		return r
	}
	s, ok := set.(*eventSet)
	if !ok || s.lib != d.gpu.lib || s.freed {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	if eventTypes&^uint64(supportedEvents) != 0 {
		return nvml.ERROR_NOT_SUPPORTED
	}
	d.gpu.registered[s] |= eventTypes
	return nvml.SUCCESS
}

func (ci *computeInstance) profileName() string {
	gp := ci.gi.profile
	if ci.slices == gp.Slices {
		return gp.Name
	}
	return nvml.MigProfileName(giSelectors[gp.Selector], gp.Slices, ci.slices, ci.gi.gpu.lib.profile.GPU.MemoryMiB*mib, gp.MemoryMiB)
}
