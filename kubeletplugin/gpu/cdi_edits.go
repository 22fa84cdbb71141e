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
	"fmt"
	"strings"

	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/driverroot"
)

func charDevice(path string, major, minor int) *cdispec.DeviceNode {
	return &cdispec.DeviceNode{Path: path, Type: "c", Major: int64(major), Minor: int64(minor)}
}

// envName turns a device name into an environment variable suffix.
func envName(device string) string {
	return strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(device))
}

// commonEdits are what every container with a device of the claim needs: the
// control and UVM device nodes and the driver's user-space files (libcuda,
// libnvidia-ml, nvidia-smi, ... as read-only mounts, see driverroot).
// NVIDIA_VISIBLE_DEVICES=void keeps the NVIDIA runtime hook from adding
// devices of its own.
func commonEdits(hd hostDevices, files driverroot.Files) cdispec.ContainerEdits {
	edits := cdispec.ContainerEdits{
		Env:         []string{"NVIDIA_VISIBLE_DEVICES=void"},
		DeviceNodes: []*cdispec.DeviceNode{charDevice("/dev/nvidiactl", nvidiaMajor, controlMinor)},
		Mounts:      files.Edits().Mounts,
	}
	if hd.uvmMajor != 0 {
		edits.DeviceNodes = append(edits.DeviceNodes,
			charDevice("/dev/nvidia-uvm", hd.uvmMajor, 0),
			charDevice("/dev/nvidia-uvm-tools", hd.uvmMajor, 1))
	}
	return edits
}

// deviceEdits exposes one prepared device: its GPU's device node, for a MIG
// device the GI and CI capability nodes, and its UUID in
// NVIDIA_DRA_DEVICE_<NAME> (one variable per device, so devices of a claim
// never overwrite each other's value).
func deviceEdits(hd hostDevices, p preparedDevice) (cdi.Device, error) {
	edits := cdispec.ContainerEdits{
		Env:         []string{fmt.Sprintf("NVIDIA_DRA_DEVICE_%s=%s", envName(p.Name), p.Data.UUID)},
		DeviceNodes: []*cdispec.DeviceNode{charDevice(fmt.Sprintf("/dev/nvidia%d", p.ParentMinor), nvidiaMajor, p.ParentMinor)},
	}
	if p.Data.Type == deviceTypeMig {
		if hd.capsMajor == 0 {
			return cdi.Device{}, fmt.Errorf("device %s: MIG needs the nvidia-caps device, not found in /proc/devices", p.Name)
		}
		for _, key := range []string{giCapKey(p.ParentMinor, p.Data.GIID), ciCapKey(p.ParentMinor, p.Data.GIID, p.Data.CIID)} {
			minor, ok := hd.migMinors[key]
			if !ok {
				return cdi.Device{}, fmt.Errorf("device %s: %s not in /proc/driver/nvidia-caps/mig-minors", p.Name, key)
			}
			edits.DeviceNodes = append(edits.DeviceNodes, charDevice(fmt.Sprintf("/dev/nvidia-caps/nvidia-cap%d", minor), hd.capsMajor, minor))
		}
	}
	edits.Env = append(edits.Env, p.SharingEnv...)
	return cdi.Device{Name: p.Name, Edits: edits}, nil
}
