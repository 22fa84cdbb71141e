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

package driverroot

import (
	"path"
	"path/filepath"

	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// CUDAImageLibraryDir is where the libraries are mounted a second time, under
// their sonames: the CUDA base images put it on LD_LIBRARY_PATH.
const CUDAImageLibraryDir = "/usr/local/nvidia/lib64"

// mountOptions are those of NVIDIA's CDI specs: read-only, no device or
// set-uid files, and no propagation back to the host.
var mountOptions = []string{"ro", "nosuid", "nodev", "rbind", "rprivate"}

// Edits are the container edits that give a container the driver's files:
// read-only bind mounts of each library under its versioned name and its
// links in the same directory, the links again in CUDAImageLibraryDir, the
// tools and the firmware directory. The zero Files give no edits.
func (f Files) Edits() cdispec.ContainerEdits {
	var edits cdispec.ContainerEdits
	mount := func(hostRel, containerPath string) {
		edits.Mounts = append(edits.Mounts, &cdispec.Mount{
			HostPath:      filepath.Join(f.HostPath, hostRel),
			ContainerPath: containerPath,
			Type:          "bind",
			Options:       mountOptions,
		})
	}
	for _, l := range f.Libraries {
		mount(l.Path, "/"+l.Path)
		for _, link := range l.Links {
			mount(l.Path, path.Join("/", path.Dir(l.Path), link))
		}
	}
	for _, l := range f.Libraries {
		for _, link := range l.Links {
			mount(l.Path, path.Join(CUDAImageLibraryDir, link))
		}
	}
	for _, b := range f.Binaries {
		mount(b, "/"+b)
	}
	if f.Firmware != "" {
		mount(f.Firmware, "/"+f.Firmware)
	}
	return edits
}
