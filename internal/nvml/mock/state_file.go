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
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/computedomain-operator/computedomain-operator/internal/atomicfile"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// The state file is what a real GPU keeps while its driver stays loaded and
// the process that changed it dies: compute mode, time slice, GPU and compute
// instances. With Config.StateFile set, New restores it (instead of the
// profile's static MIG layouts) and every change is written to it before the
// call returns, so a plugin killed with SIGKILL and started again in a new
// process finds the GPUs as it left them, as on a node.

// stateFileVersion is the format of the state file.
const stateFileVersion = 1

type stateFile struct {
	Version int        `json:"version"`
	Node    string     `json:"node"`
	GPUs    []gpuState `json:"gpus"`
}

type gpuState struct {
	Index       int          `json:"index"`
	ComputeMode int          `json:"computeMode"`
	TimeSlice   int          `json:"timeSlice"`
	MIGSerial   uint64       `json:"migSerial"`
	GIs         []giStateRec `json:"gpuInstances,omitempty"`
}

type giStateRec struct {
	ID        uint32       `json:"id"`
	ProfileID uint32       `json:"profileID"`
	Start     uint32       `json:"start"`
	CIs       []ciStateRec `json:"computeInstances,omitempty"`
}

type ciStateRec struct {
	ID      uint32 `json:"id"`
	Profile int    `json:"profile"`
	Slices  uint32 `json:"slices"`
	Start   uint32 `json:"start"`
	UUID    string `json:"uuid"`
}

// persistLocked writes the GPUs' state to the state file (none: nothing);
// the caller holds the lock. A change whose state cannot be written fails
// with ERROR_UNKNOWN, as a driver call that did not reach the GPU.
func (m *Lib) persistLocked() nvml.Return {
	if m.cfg.StateFile == "" {
		return nvml.SUCCESS
	}
	st := stateFile{Version: stateFileVersion, Node: m.cfg.NodeName}
	for _, g := range m.gpus {
		gs := gpuState{Index: g.index, ComputeMode: int(g.computeMode), TimeSlice: int(g.timeSlice), MIGSerial: g.migSerial}
		for _, gi := range g.gis {
			rec := giStateRec{ID: gi.id, ProfileID: gi.profile.ID, Start: gi.start}
			for _, ci := range gi.cis {
				rec.CIs = append(rec.CIs, ciStateRec{ID: ci.id, Profile: ci.profile, Slices: ci.slices, Start: ci.start, UUID: ci.uuid})
			}
			slices.SortFunc(rec.CIs, func(a, b ciStateRec) int { return int(a.ID) - int(b.ID) })
			gs.GIs = append(gs.GIs, rec)
		}
		slices.SortFunc(gs.GIs, func(a, b giStateRec) int { return int(a.ID) - int(b.ID) })
		st.GPUs = append(st.GPUs, gs)
	}
	data, err := json.Marshal(st)
	if err != nil {
		return nvml.ERROR_UNKNOWN
	}
	if err := os.MkdirAll(filepath.Dir(m.cfg.StateFile), 0o755); err != nil {
		return nvml.ERROR_UNKNOWN
	}
	if err := atomicfile.Write(m.cfg.StateFile, data, 0o644); err != nil {
		return nvml.ERROR_UNKNOWN
	}
	return nvml.SUCCESS
}

// restore loads the state file into the GPUs New built; false when there is
// none yet. A file that does not fit the node's profile is an error naming
// the file and the field: it belongs to another node or profile.
func (m *Lib) restore() (bool, error) {
	data, err := os.ReadFile(m.cfg.StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("mock NVML state file: %w", err)
	}
	var st stateFile
	if err := json.Unmarshal(data, &st); err != nil {
		return false, fmt.Errorf("mock NVML state file %s: %w", m.cfg.StateFile, err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("mock NVML state file %s: %s", m.cfg.StateFile, fmt.Sprintf(format, args...))
	}
	if st.Version != stateFileVersion {
		return false, bad("version %d: want %d", st.Version, stateFileVersion)
	}
	if st.Node != m.cfg.NodeName {
		return false, bad("node %q: this is node %q", st.Node, m.cfg.NodeName)
	}
	if len(st.GPUs) != len(m.gpus) {
		return false, bad("gpus: %d, the profile has %d", len(st.GPUs), len(m.gpus))
	}
	for i, gs := range st.GPUs {
		if gs.Index != i {
			return false, bad("gpus[%d].index %d: want %d", i, gs.Index, i)
		}
		g := m.gpus[i]
		g.computeMode, g.timeSlice, g.migSerial = nvml.ComputeMode(gs.ComputeMode), nvml.TimeSlice(gs.TimeSlice), gs.MIGSerial
		if len(gs.GIs) > 0 && g.mig == nil {
			return false, bad("gpus[%d].gpuInstances: the profile's GPUs have no MIG", i)
		}
		for j, rec := range gs.GIs {
			mp := g.migProfileByID(rec.ProfileID)
			if mp == nil {
				return false, bad("gpus[%d].gpuInstances[%d].profileID %d: not a profile of this GPU", i, j, rec.ProfileID)
			}
			if r := g.mig.canPlace(mp, rec.Start); r != nvml.SUCCESS {
				return false, bad("gpus[%d].gpuInstances[%d].start %d: does not fit (nvml return %d)", i, j, rec.Start, int32(r))
			}
			g.mig.place(mp, rec.Start)
			gi := &gpuInstance{gpu: g, id: rec.ID, profile: mp, start: rec.Start, cis: map[uint32]*computeInstance{}}
			g.gis[rec.ID] = gi
			for _, c := range rec.CIs {
				gi.cis[c.ID] = &computeInstance{gi: gi, id: c.ID, profile: c.Profile, slices: c.Slices, start: c.Start, uuid: c.UUID}
			}
		}
	}
	return true, nil
}
