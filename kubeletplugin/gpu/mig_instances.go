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

package gpu

import (
	"errors"
	"fmt"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// migInstance names a GPU instance and its compute instance on a parent GPU.
type migInstance struct {
	GIID int    `json:"gi"`
	CIID int    `json:"ci"`
	UUID string `json:"uuid,omitempty"`
}

// nvmlErr names the operation of a failed NVML call; a lost GPU wraps
// nvml.ErrGPULost.
func nvmlErr(lib nvml.Interface, op string, r nvml.Return) error {
	return nvml.ReturnError(lib, op, r)
}

// createMigInstance creates a GPU instance of the profile at the placement and
// one compute instance spanning it, and returns their IDs and the MIG UUID.
// On failure nothing is left behind.
func createMigInstance(lib nvml.Interface, parent nvml.Device, p MigProfile, pl MigPlacement) (migInstance, error) {
	info, r := parent.GetGpuInstanceProfileInfo(p.Selector)
	if err := nvmlErr(lib, "get GPU instance profile "+p.Name, r); err != nil {
		return migInstance{}, err
	}
	placement := nvml.GpuInstancePlacement{Start: uint32(pl.Start), Size: uint32(pl.Size)}
	gi, r := parent.CreateGpuInstanceWithPlacement(&info, &placement)
	if err := nvmlErr(lib, fmt.Sprintf("create GPU instance %s at %d", p.Name, pl.Start), r); err != nil {
		return migInstance{}, err
	}
	giInfo, r := gi.GetInfo()
	if err := nvmlErr(lib, "read GPU instance", r); err != nil {
		_ = gi.Destroy()
		return migInstance{}, err
	}
	ciInfo, r := gi.GetComputeInstanceProfileInfo(p.CIProfileSelector, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
	if err := nvmlErr(lib, "get compute instance profile", r); err != nil {
		_ = gi.Destroy()
		return migInstance{}, err
	}
	ci, r := gi.CreateComputeInstance(&ciInfo)
	if err := nvmlErr(lib, "create compute instance", r); err != nil {
		_ = gi.Destroy()
		return migInstance{}, err
	}
	ciData, r := ci.GetInfo()
	if err := nvmlErr(lib, "read compute instance", r); err != nil {
		_ = ci.Destroy()
		_ = gi.Destroy()
		return migInstance{}, err
	}
	inst := migInstance{GIID: int(giInfo.Id), CIID: int(ciData.Id)}
	uuid, err := migUUID(lib, parent, inst)
	if err != nil {
		_ = ci.Destroy()
		_ = gi.Destroy()
		return migInstance{}, err
	}
	inst.UUID = uuid
	return inst, nil
}

// migUUID finds the MIG device handle of a GI/CI pair.
func migUUID(lib nvml.Interface, parent nvml.Device, inst migInstance) (string, error) {
	n, r := parent.GetMaxMigDeviceCount()
	if err := nvmlErr(lib, "count MIG devices", r); err != nil {
		return "", err
	}
	for i := range n {
		mig, r := parent.GetMigDeviceHandleByIndex(i)
		if r == nvml.ERROR_NOT_FOUND || r == nvml.ERROR_INVALID_ARGUMENT {
			continue
		}
		if err := nvmlErr(lib, "get MIG device", r); err != nil {
			return "", err
		}
		gi, r1 := mig.GetGpuInstanceId()
		ci, r2 := mig.GetComputeInstanceId()
		if r1 != nvml.SUCCESS || r2 != nvml.SUCCESS || gi != inst.GIID || ci != inst.CIID {
			continue
		}
		uuid, r := mig.GetUUID()
		if err := nvmlErr(lib, "read MIG UUID", r); err != nil {
			return "", err
		}
		return uuid, nil
	}
	return "", fmt.Errorf("no MIG device for GPU instance %d, compute instance %d", inst.GIID, inst.CIID)
}

// destroyMigInstance destroys the compute instance and the GPU instance. An
// instance that is already gone counts as destroyed (idempotent unprepare).
func destroyMigInstance(lib nvml.Interface, parent nvml.Device, inst migInstance) error {
	gi, r := parent.GetGpuInstanceById(inst.GIID)
	if r == nvml.ERROR_NOT_FOUND || r == nvml.ERROR_INVALID_ARGUMENT {
		return nil
	}
	if err := nvmlErr(lib, fmt.Sprintf("get GPU instance %d", inst.GIID), r); err != nil {
		return err
	}
	ci, r := gi.GetComputeInstanceById(inst.CIID)
	switch r {
	case nvml.SUCCESS:
		if err := nvmlErr(lib, fmt.Sprintf("destroy compute instance %d", inst.CIID), ci.Destroy()); err != nil {
			return err
		}
	case nvml.ERROR_NOT_FOUND, nvml.ERROR_INVALID_ARGUMENT:
	default:
		return nvmlErr(lib, fmt.Sprintf("get compute instance %d", inst.CIID), r)
	}
	return nvmlErr(lib, fmt.Sprintf("destroy GPU instance %d", inst.GIID), gi.Destroy())
}

// destroyUnknownMigInstances removes every GPU instance on the parent that keep
// does not list, with all its compute instances. Used at start-up in
// partitionable mode: an instance nobody recorded was left by a crash or by
// hand, and would make the published counters lie.
func destroyUnknownMigInstances(lib nvml.Interface, parent nvml.Device, profiles []MigProfile, keep map[int]bool) (int, error) {
	destroyed := 0
	var errs []error
	for _, p := range profiles {
		info, r := parent.GetGpuInstanceProfileInfo(p.Selector)
		if r != nvml.SUCCESS {
			continue
		}
		gis, r := parent.GetGpuInstances(&info)
		if err := nvmlErr(lib, "list GPU instances of "+p.Name, r); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, gi := range gis {
			giInfo, r := gi.GetInfo()
			if err := nvmlErr(lib, "read GPU instance", r); err != nil {
				errs = append(errs, err)
				continue
			}
			if keep[int(giInfo.Id)] {
				continue
			}
			for sel := range nvml.COMPUTE_INSTANCE_PROFILE_COUNT {
				ciInfo, r := gi.GetComputeInstanceProfileInfo(sel, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
				if r != nvml.SUCCESS {
					continue
				}
				cis, r := gi.GetComputeInstances(&ciInfo)
				if r != nvml.SUCCESS {
					continue
				}
				for _, ci := range cis {
					if err := nvmlErr(lib, "destroy compute instance", ci.Destroy()); err != nil {
						errs = append(errs, err)
					}
				}
			}
			if err := nvmlErr(lib, fmt.Sprintf("destroy GPU instance %d", giInfo.Id), gi.Destroy()); err != nil {
				errs = append(errs, err)
				continue
			}
			destroyed++
		}
	}
	return destroyed, errors.Join(errs...)
}
