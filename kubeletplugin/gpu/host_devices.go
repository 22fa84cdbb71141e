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
	"io/fs"

	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
)

// nvidiaMajor is the fixed character-device major of /dev/nvidia*.
const nvidiaMajor = 195

// controlMinor is /dev/nvidiactl's minor.
const controlMinor = 255

// hostDevices are the character-device numbers the CDI specs need, read from
// the host's /proc through the host root (a temp directory in tests).
type hostDevices struct {
	// uvmMajor is 0 when nvidia-uvm is not loaded.
	uvmMajor int
	// capsMajor is 0 when nvidia-caps is not registered (no MIG support).
	capsMajor int
	// migMinors maps "gpu0/gi1/access" and "gpu0/gi1/ci0/access" to the
	// minor of /dev/nvidia-caps/nvidia-cap<N>.
	migMinors map[string]int
}

func absent(err error) bool {
	return errors.Is(err, hostroot.ErrNotFound) || errors.Is(err, fs.ErrNotExist)
}

func readHostDevices(root hostroot.Root) (hostDevices, error) {
	hd := hostDevices{migMinors: map[string]int{}}
	for name, dst := range map[string]*int{"nvidia-uvm": &hd.uvmMajor, "nvidia-caps": &hd.capsMajor} {
		major, err := root.CharDeviceMajor(name)
		switch {
		case err == nil:
			*dst = int(major)
		case absent(err):
		default:
			return hd, fmt.Errorf("host devices: %w", err)
		}
	}
	minors, err := root.MIGMinors()
	switch {
	case err == nil:
		for k, v := range minors {
			hd.migMinors[k] = int(v)
		}
	case absent(err):
	default:
		return hd, fmt.Errorf("host devices: %w", err)
	}
	return hd, nil
}

func giCapKey(gpuMinor, gi int) string { return fmt.Sprintf("gpu%d/gi%d/access", gpuMinor, gi) }

func ciCapKey(gpuMinor, gi, ci int) string {
	return fmt.Sprintf("gpu%d/gi%d/ci%d/access", gpuMinor, gi, ci)
}
