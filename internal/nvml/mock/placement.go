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

import "github.com/computedomain-operator/computedomain-operator/internal/nvml"

// migState tracks which memory slices of a GPU are taken and how many
// instances of each GPU instance profile exist, and enforces the profile's
// placement rules: a GPU instance may only start at one of its profile's
// placements, may not overlap another instance, and a profile has at most
// Instances instances.
type migState struct {
	totalSlices uint32
	used        []bool
	count       map[uint32]int
}

func newMIGState(p *Profile) *migState {
	var total uint32
	for _, mp := range p.MIG.Profiles {
		for _, s := range mp.Placements {
			if s+mp.PlacementSize > total {
				total = s + mp.PlacementSize
			}
		}
	}
	return &migState{totalSlices: total, used: make([]bool, total), count: map[uint32]int{}}
}

func (s *migState) validStart(mp *MIGProfileSpec, start uint32) bool {
	for _, p := range mp.Placements {
		if p == start {
			return true
		}
	}
	return false
}

func (s *migState) free(mp *MIGProfileSpec, start uint32) bool {
	for i := start; i < start+mp.PlacementSize; i++ {
		if s.used[i] {
			return false
		}
	}
	return true
}

// canPlace returns SUCCESS, ERROR_INVALID_ARGUMENT for a placement the
// profile does not have, or ERROR_INSUFFICIENT_RESOURCES when the slices are
// taken or the profile's instance count is reached.
func (s *migState) canPlace(mp *MIGProfileSpec, start uint32) nvml.Return {
	if !s.validStart(mp, start) {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	if s.count[mp.ID] >= int(mp.Instances) || !s.free(mp, start) {
		return nvml.ERROR_INSUFFICIENT_RESOURCES
	}
	return nvml.SUCCESS
}

func (s *migState) place(mp *MIGProfileSpec, start uint32) {
	for i := start; i < start+mp.PlacementSize; i++ {
		s.used[i] = true
	}
	s.count[mp.ID]++
}

func (s *migState) unplace(mp *MIGProfileSpec, start uint32) {
	for i := start; i < start+mp.PlacementSize; i++ {
		s.used[i] = false
	}
	s.count[mp.ID]--
}

// remaining counts how many more instances of a profile fit, placing them
// greedily in placement order (placements are aligned, so greedy is exact).
func (s *migState) remaining(mp *MIGProfileSpec) int {
	used := append([]bool(nil), s.used...)
	n := 0
	for _, p := range mp.Placements {
		if s.count[mp.ID]+n >= int(mp.Instances) {
			break
		}
		ok := true
		for i := p; i < p+mp.PlacementSize; i++ {
			if used[i] {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		for i := p; i < p+mp.PlacementSize; i++ {
			used[i] = true
		}
		n++
	}
	return n
}

// gpuInstanceID numbers GPU instances the way the driver does on A100/H100:
// as nodes of a binary tree over the memory slices (the full GPU is 0, the
// two halves 1 and 2, the quarters 3..6, the eighths 7..14). Profiles whose
// sizes are not powers of two fall back to the lowest unused ID.
func (s *migState) gpuInstanceID(size, start uint32, taken func(uint32) bool) uint32 {
	pow2 := func(v uint32) bool { return v != 0 && v&(v-1) == 0 }
	if pow2(size) && pow2(s.totalSlices) && size <= s.totalSlices {
		id := s.totalSlices/size - 1 + start/size
		if !taken(id) {
			return id
		}
	}
	for id := uint32(1); ; id++ {
		if !taken(id) {
			return id
		}
	}
}
