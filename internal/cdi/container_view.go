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
