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

type gpuInstance struct {
	gpu       *gpu
	id        uint32
	profile   *MIGProfileSpec
	start     uint32
	cis       map[uint32]*computeInstance
	destroyed bool
}

type computeInstance struct {
	gi        *gpuInstance
	id        uint32
	profile   int
	slices    uint32
	start     uint32
	uuid      string
	destroyed bool
}

var _ nvml.GpuInstance = (*gpuInstance)(nil)
var _ nvml.ComputeInstance = (*computeInstance)(nil)

var ciSlices = map[int]uint32{
	nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE: 1,
	nvml.COMPUTE_INSTANCE_PROFILE_2_SLICE: 2,
	nvml.COMPUTE_INSTANCE_PROFILE_3_SLICE: 3,
	nvml.COMPUTE_INSTANCE_PROFILE_4_SLICE: 4,
	nvml.COMPUTE_INSTANCE_PROFILE_7_SLICE: 7,
	nvml.COMPUTE_INSTANCE_PROFILE_8_SLICE: 8,
	nvml.COMPUTE_INSTANCE_PROFILE_6_SLICE: 6,
}

func fullCIProfile(slices uint32) int {
	p, _ := nvml.FullComputeInstanceProfile(slices)
	return p
}

// ciProfileInfo describes a compute instance profile of this GPU instance:
// c compute slices of the instance's g, sharing its engines.
func (gi *gpuInstance) ciProfileInfo(profile int) (nvml.ComputeInstanceProfileInfo, bool) {
	c, ok := ciSlices[profile]
	g := gi.profile.Slices
	if !ok || c > g || (c != g && c == 6) || (c != g && c == 8) {
		return nvml.ComputeInstanceProfileInfo{}, false
	}
	return nvml.ComputeInstanceProfileInfo{
		Id:                    uint32(profile),
		SliceCount:            c,
		InstanceCount:         g / c,
		MultiprocessorCount:   gi.profile.Multiprocessors * c / g,
		SharedCopyEngineCount: gi.profile.CopyEngines,
		SharedDecoderCount:    gi.profile.Decoders,
		SharedEncoderCount:    gi.profile.Encoders,
		SharedJpegCount:       gi.profile.JPEGEngines,
		SharedOfaCount:        gi.profile.OFAEngines,
	}, true
}

func (gi *gpuInstance) ciUsed(start, size uint32) bool {
	for _, ci := range gi.cis {
		if start < ci.start+ci.slices && ci.start < start+size {
			return true
		}
	}
	return false
}

func (gi *gpuInstance) ciFreePlacements(info nvml.ComputeInstanceProfileInfo) []uint32 {
	var out []uint32
	for k := uint32(0); k < info.InstanceCount; k++ {
		start := k * info.SliceCount
		if !gi.ciUsed(start, info.SliceCount) {
			out = append(out, start)
		}
	}
	return out
}

// createCI creates a compute instance; the caller holds the lock.
func (gi *gpuInstance) createCI(profile int) (*computeInstance, nvml.Return) {
	info, ok := gi.ciProfileInfo(profile)
	if !ok {
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	free := gi.ciFreePlacements(info)
	if len(free) == 0 {
		return nil, nvml.ERROR_INSUFFICIENT_RESOURCES
	}
	var id uint32
	for {
		if _, taken := gi.cis[id]; !taken {
			break
		}
		id++
	}
	g := gi.gpu
	ci := &computeInstance{
		gi:      gi,
		id:      id,
		profile: profile,
		slices:  info.SliceCount,
		start:   free[0],
		uuid:    MIGUUID(g.lib.cfg.NodeName, g.index, g.migSerial),
	}
	if hook := g.lib.cfg.MIGDeviceHook; hook != nil {
		if err := hook(g.index, int(gi.id), int(id), true); err != nil {
			return nil, nvml.ERROR_UNKNOWN
		}
	}
	g.migSerial++
	gi.cis[id] = ci
	return ci, nvml.SUCCESS
}

// check is the common prologue of instance calls; the caller holds the lock.
func (gi *gpuInstance) check() nvml.Return {
	if r := gi.gpu.lib.initialized(); r != nvml.SUCCESS {
		return r
	}
	if gi.gpu.lost {
		return nvml.ERROR_GPU_IS_LOST
	}
	if gi.destroyed {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	return nvml.SUCCESS
}

func (gi *gpuInstance) GetInfo() (nvml.GpuInstanceInfo, nvml.Return) {
	gi.gpu.lib.mu.Lock()
	defer gi.gpu.lib.mu.Unlock()
	if r := gi.check(); r != nvml.SUCCESS {
		return nvml.GpuInstanceInfo{}, r
	}
	return nvml.GpuInstanceInfo{
		Device:    &device{gpu: gi.gpu},
		Id:        gi.id,
		ProfileId: gi.profile.ID,
		Placement: nvml.GpuInstancePlacement{Start: gi.start, Size: gi.profile.PlacementSize},
	}, nvml.SUCCESS
}

func (gi *gpuInstance) GetComputeInstanceProfileInfo(profile, engProfile int) (nvml.ComputeInstanceProfileInfo, nvml.Return) {
	gi.gpu.lib.mu.Lock()
	defer gi.gpu.lib.mu.Unlock()
	if r := gi.check(); r != nvml.SUCCESS {
		return nvml.ComputeInstanceProfileInfo{}, r
	}
	if engProfile != nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED {
		return nvml.ComputeInstanceProfileInfo{}, nvml.ERROR_INVALID_ARGUMENT
	}
	info, ok := gi.ciProfileInfo(profile)
	if !ok {
		return nvml.ComputeInstanceProfileInfo{}, nvml.ERROR_NOT_SUPPORTED
	}
	return info, nvml.SUCCESS
}

func (gi *gpuInstance) GetComputeInstanceRemainingCapacity(info *nvml.ComputeInstanceProfileInfo) (int, nvml.Return) {
	gi.gpu.lib.mu.Lock()
	defer gi.gpu.lib.mu.Unlock()
	if r := gi.check(); r != nvml.SUCCESS {
		return 0, r
	}
	if info == nil {
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	own, ok := gi.ciProfileInfo(int(info.Id))
	if !ok {
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	return len(gi.ciFreePlacements(own)), nvml.SUCCESS
}

func (gi *gpuInstance) CreateComputeInstance(info *nvml.ComputeInstanceProfileInfo) (nvml.ComputeInstance, nvml.Return) {
	gi.gpu.lib.mu.Lock()
	defer gi.gpu.lib.mu.Unlock()
	if r := gi.check(); r != nvml.SUCCESS {
		return nil, r
	}
	if info == nil {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	ci, r := gi.createCI(int(info.Id))
	if r != nvml.SUCCESS {
		return nil, r
	}
	if r := gi.gpu.lib.persistLocked(); r != nvml.SUCCESS {
		return nil, r
	}
	return ci, nvml.SUCCESS
}

func (gi *gpuInstance) GetComputeInstances(info *nvml.ComputeInstanceProfileInfo) ([]nvml.ComputeInstance, nvml.Return) {
	gi.gpu.lib.mu.Lock()
	defer gi.gpu.lib.mu.Unlock()
	if r := gi.check(); r != nvml.SUCCESS {
		return nil, r
	}
	if info == nil {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	var cis []*computeInstance
	for _, ci := range gi.cis {
		if ci.profile == int(info.Id) {
			cis = append(cis, ci)
		}
	}
	sort.Slice(cis, func(i, j int) bool { return cis[i].id < cis[j].id })
	out := make([]nvml.ComputeInstance, 0, len(cis))
	for _, ci := range cis {
		out = append(out, ci)
	}
	return out, nvml.SUCCESS
}

func (gi *gpuInstance) GetComputeInstanceById(id int) (nvml.ComputeInstance, nvml.Return) {
	gi.gpu.lib.mu.Lock()
	defer gi.gpu.lib.mu.Unlock()
	if r := gi.check(); r != nvml.SUCCESS {
		return nil, r
	}
	ci, ok := gi.cis[uint32(id)]
	if !ok || id < 0 {
		return nil, nvml.ERROR_NOT_FOUND
	}
	return ci, nvml.SUCCESS
}

// Destroy removes the GPU instance; ERROR_IN_USE while it has compute
// instances.
func (gi *gpuInstance) Destroy() nvml.Return {
	gi.gpu.lib.mu.Lock()
	defer gi.gpu.lib.mu.Unlock()
	if r := gi.check(); r != nvml.SUCCESS {
		return r
	}
	if len(gi.cis) > 0 {
		return nvml.ERROR_IN_USE
	}
	gi.gpu.mig.unplace(gi.profile, gi.start)
	delete(gi.gpu.gis, gi.id)
	gi.destroyed = true
	return gi.gpu.lib.persistLocked()
}

func (ci *computeInstance) check() nvml.Return {
	if r := ci.gi.check(); r != nvml.SUCCESS {
		return r
	}
	if ci.destroyed {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	return nvml.SUCCESS
}

func (ci *computeInstance) GetInfo() (nvml.ComputeInstanceInfo, nvml.Return) {
	ci.gi.gpu.lib.mu.Lock()
	defer ci.gi.gpu.lib.mu.Unlock()
	if r := ci.check(); r != nvml.SUCCESS {
		return nvml.ComputeInstanceInfo{}, r
	}
	return nvml.ComputeInstanceInfo{
		Device:      &device{gpu: ci.gi.gpu},
		GpuInstance: ci.gi,
		Id:          ci.id,
		ProfileId:   uint32(ci.profile),
		Placement:   nvml.ComputeInstancePlacement{Start: ci.start, Size: ci.slices},
	}, nvml.SUCCESS
}

func (ci *computeInstance) Destroy() nvml.Return {
	ci.gi.gpu.lib.mu.Lock()
	defer ci.gi.gpu.lib.mu.Unlock()
	if r := ci.check(); r != nvml.SUCCESS {
		return r
	}
	delete(ci.gi.cis, ci.id)
	ci.destroyed = true
	if hook := ci.gi.gpu.lib.cfg.MIGDeviceHook; hook != nil {
		if err := hook(ci.gi.gpu.index, int(ci.gi.id), int(ci.id), false); err != nil {
			return nvml.ERROR_UNKNOWN
		}
	}
	return ci.gi.gpu.lib.persistLocked()
}
