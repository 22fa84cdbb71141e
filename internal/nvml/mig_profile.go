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
	"fmt"
	"math"
)

// migAttributeSuffix returns the attribute suffix nvidia-smi appends to the
// profile name of a GPU instance profile selector ("+me" for the 1-slice
// profile with media extensions, ...).
func migAttributeSuffix(giProfile int) string {
	switch giProfile {
	case GPU_INSTANCE_PROFILE_1_SLICE_REV1, GPU_INSTANCE_PROFILE_2_SLICE_REV1:
		return "+me"
	case GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME, GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME:
		return "+me.all"
	case GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, GPU_INSTANCE_PROFILE_2_SLICE_NO_ME:
		return "-me"
	case GPU_INSTANCE_PROFILE_1_SLICE_GFX, GPU_INSTANCE_PROFILE_2_SLICE_GFX,
		GPU_INSTANCE_PROFILE_3_SLICE_GFX, GPU_INSTANCE_PROFILE_4_SLICE_GFX:
		return "+gfx"
	}
	return ""
}

// MigMemoryGB computes the "Ngb" part of a MIG profile name the way
// nvidia-smi and go-nvlib do: the instance's share of the GPU's memory,
// rounded up to eighths, times the GPU's memory in whole GB.
func MigMemoryGB(totalMemoryBytes, migMemoryMB uint64) uint64 {
	const (
		oneMB = 1024 * 1024
		oneGB = 1024 * 1024 * 1024
	)
	if totalMemoryBytes == 0 {
		return 0
	}
	frac := float64(migMemoryMB*oneMB) / float64(totalMemoryBytes)
	frac = math.Ceil(frac*8) / 8
	totalGB := float64((totalMemoryBytes + oneGB - 1) / oneGB)
	return uint64(math.Round(frac * totalGB))
}

// MigProfileName names a MIG profile as nvidia-smi does: "1g.5gb",
// "1g.5gb+me", or "1c.3g.20gb" when the compute instance uses fewer slices
// than its GPU instance. giProfile is the GPU_INSTANCE_PROFILE_* selector.
func MigProfileName(giProfile int, giSlices, ciSlices uint32, totalMemoryBytes, migMemoryMB uint64) string {
	name := fmt.Sprintf("%dg.%dgb%s", giSlices, MigMemoryGB(totalMemoryBytes, migMemoryMB), migAttributeSuffix(giProfile))
	if ciSlices != 0 && ciSlices != giSlices {
		name = fmt.Sprintf("%dc.%s", ciSlices, name)
	}
	return name
}

// FullComputeInstanceProfile returns the COMPUTE_INSTANCE_PROFILE_* selector
// whose compute instance spans a whole GPU instance of giSlices slices.
func FullComputeInstanceProfile(giSlices uint32) (int, error) {
	switch giSlices {
	case 1:
		return COMPUTE_INSTANCE_PROFILE_1_SLICE, nil
	case 2:
		return COMPUTE_INSTANCE_PROFILE_2_SLICE, nil
	case 3:
		return COMPUTE_INSTANCE_PROFILE_3_SLICE, nil
	case 4:
		return COMPUTE_INSTANCE_PROFILE_4_SLICE, nil
	case 6:
		return COMPUTE_INSTANCE_PROFILE_6_SLICE, nil
	case 7:
		return COMPUTE_INSTANCE_PROFILE_7_SLICE, nil
	case 8:
		return COMPUTE_INSTANCE_PROFILE_8_SLICE, nil
	}
	return 0, fmt.Errorf("no compute instance profile spans %d slices (allowed: 1, 2, 3, 4, 6, 7, 8)", giSlices)
}
