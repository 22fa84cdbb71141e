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

// gpu is the state of one simulated full GPU. All fields are guarded by the
// owning Lib's mutex.
type gpu struct {
	lib         *Lib
	index       int
	uuid        string
	busID       string
	numa        int
	computeMode nvml.ComputeMode
	timeSlice   nvml.TimeSlice

	mig       *migState
	gis       map[uint32]*gpuInstance
	migSerial uint64

	fabric     nvml.GpuFabricInfo
	lost       bool
	registered map[*eventSet]uint64
}

func newGPU(m *Lib, index int, clusterUUID [16]byte) *gpu {
	p := m.profile
	busID, _ := nvmlBusID(p.GPU.PCIBusIDs[index])
	g := &gpu{
		lib:        m,
		index:      index,
		uuid:       GPUUUID(m.cfg.NodeName, index),
		busID:      busID,
		numa:       -1,
		gis:        map[uint32]*gpuInstance{},
		registered: map[*eventSet]uint64{},
	}
	if len(p.GPU.NUMANodes) > 0 {
		g.numa = p.GPU.NUMANodes[index]
	}
	if p.MIG != nil {
		g.mig = newMIGState(p)
	}
	if p.Fabric != nil {
		clique := p.Fabric.CliqueID
		if m.cfg.CliqueID != nil && p.Fabric.MultiNode {
			clique = *m.cfg.CliqueID
		}
		g.fabric = nvml.GpuFabricInfo{
			ClusterUuid: clusterUUID,
			Status:      uint32(nvml.SUCCESS),
			CliqueId:    clique,
			State:       nvml.GPU_FABRIC_STATE_COMPLETED,
			HealthMask:  nvml.GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_FALSE << nvml.GPU_FABRIC_HEALTH_MASK_SHIFT_DEGRADED_BW,
		}
	}
	return g
}

func (g *gpu) migProfileByID(id uint32) *MIGProfileSpec {
	for i := range g.lib.profile.MIG.Profiles {
		if g.lib.profile.MIG.Profiles[i].ID == id {
			return &g.lib.profile.MIG.Profiles[i]
		}
	}
	return nil
}

func (g *gpu) migProfileBySelector(sel int) *MIGProfileSpec {
	for i := range g.lib.profile.MIG.Profiles {
		mp := &g.lib.profile.MIG.Profiles[i]
		if giSelectors[mp.Selector] == sel {
			return mp
		}
	}
	return nil
}

func giProfileInfo(mp *MIGProfileSpec) nvml.GpuInstanceProfileInfo {
	return nvml.GpuInstanceProfileInfo{
		Id:                  mp.ID,
		SliceCount:          mp.Slices,
		InstanceCount:       mp.Instances,
		MultiprocessorCount: mp.Multiprocessors,
		CopyEngineCount:     mp.CopyEngines,
		DecoderCount:        mp.Decoders,
		EncoderCount:        mp.Encoders,
		JpegCount:           mp.JPEGEngines,
		OfaCount:            mp.OFAEngines,
		MemorySizeMB:        mp.MemoryMiB,
	}
}

// createGI creates a GPU instance; the caller holds the lock.
func (g *gpu) createGI(mp *MIGProfileSpec, start uint32) (*gpuInstance, nvml.Return) {
	if r := g.mig.canPlace(mp, start); r != nvml.SUCCESS {
		return nil, r
	}
	g.mig.place(mp, start)
	id := g.mig.gpuInstanceID(mp.PlacementSize, start, func(id uint32) bool { _, ok := g.gis[id]; return ok })
	gi := &gpuInstance{gpu: g, id: id, profile: mp, start: start, cis: map[uint32]*computeInstance{}}
	g.gis[id] = gi
	return gi, nvml.SUCCESS
}

// migDevices lists the compute instances (MIG devices) in GI, CI order.
func (g *gpu) migDevices() []*computeInstance {
	var out []*computeInstance
	for _, gi := range g.gis {
		for _, ci := range gi.cis {
			out = append(out, ci)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].gi.id != out[j].gi.id {
			return out[i].gi.id < out[j].gi.id
		}
		return out[i].id < out[j].id
	})
	return out
}
