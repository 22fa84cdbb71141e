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

package cdi

import (
	"fmt"
	"slices"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
)

// ContainerView is what a container runtime with CDI enabled adds to a
// container for a set of CDI device IDs.
type ContainerView struct {
	Env         []string
	DeviceNodes []string
	Mounts      []string
}

// Resolve reads the specs under root the way a container runtime does (the
// upstream CDI cache) and applies the devices' edits to an empty container.
// Tests and the inspect command use it to check what a workload would see.
func Resolve(root string, ids ...string) (ContainerView, error) {
	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(root), cdiapi.WithAutoRefresh(false))
	if err != nil {
		return ContainerView{}, fmt.Errorf("read CDI specs in %s: %w", root, err)
	}
	spec := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
	if unresolved, err := cache.InjectDevices(spec, ids...); err != nil {
		return ContainerView{}, fmt.Errorf("inject CDI devices (unresolved %v, spec errors %v): %w", unresolved, cache.GetErrors(), err)
	}
	var view ContainerView
	view.Env = slices.Clone(spec.Process.Env)
	for _, d := range spec.Linux.Devices {
		view.DeviceNodes = append(view.DeviceNodes, d.Path)
	}
	for _, m := range spec.Mounts {
		view.Mounts = append(view.Mounts, m.Destination)
	}
	slices.Sort(view.Env)
	slices.Sort(view.DeviceNodes)
	slices.Sort(view.Mounts)
	return view, nil
}
