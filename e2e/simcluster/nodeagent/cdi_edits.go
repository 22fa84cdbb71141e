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

package nodeagent

import (
	"encoding/json"
	"fmt"
	"sort"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"tags.cncf.io/container-device-interface/pkg/cdi"
)

// CDIEditsAnnotation holds, as JSON, a map from container name to the
// ContainerEdits the runtime would apply: what a test can read instead of
// exec'ing into the container.
const CDIEditsAnnotation = "simcluster.computedomain-operator.io/cdi-edits"

// ContainerEdits is a container's final environment, device nodes and mounts
// after applying its CDI devices the way a CDI-enabled runtime does.
type ContainerEdits struct {
	CDIDevices  []string     `json:"cdiDevices"`
	Env         []string     `json:"env,omitempty"`
	DeviceNodes []DeviceNode `json:"deviceNodes,omitempty"`
	Mounts      []Mount      `json:"mounts,omitempty"`
}

// DeviceNode is a device node in the container.
type DeviceNode struct {
	Path  string `json:"path"`
	Type  string `json:"type,omitempty"`
	Major int64  `json:"major,omitempty"`
	Minor int64  `json:"minor,omitempty"`
}

// Mount is a mount in the container.
type Mount struct {
	ContainerPath string   `json:"containerPath"`
	HostPath      string   `json:"hostPath"`
	Options       []string `json:"options,omitempty"`
}

// ResolveCDI applies the CDI devices to an empty OCI spec using the specs in
// cdiDir, as a runtime with CDI enabled does, and returns the result. An
// unresolvable device or an invalid spec is an error.
func ResolveCDI(cdiDir string, deviceIDs []string) (ContainerEdits, error) {
	edits := ContainerEdits{CDIDevices: append([]string{}, deviceIDs...)}
	if len(deviceIDs) == 0 {
		return edits, nil
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(cdiDir), cdi.WithAutoRefresh(false))
	if err != nil {
		return edits, fmt.Errorf("load CDI specs from %s: %w", cdiDir, err)
	}
	spec := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
	unresolved, err := cache.InjectDevices(spec, deviceIDs...)
	if err != nil {
		return edits, fmt.Errorf("apply CDI devices %v (unresolved %v): %w", deviceIDs, unresolved, err)
	}
	edits.Env = append(edits.Env, spec.Process.Env...)
	sort.Strings(edits.Env)
	for _, d := range spec.Linux.Devices {
		edits.DeviceNodes = append(edits.DeviceNodes, DeviceNode{Path: d.Path, Type: d.Type, Major: d.Major, Minor: d.Minor})
	}
	for _, m := range spec.Mounts {
		edits.Mounts = append(edits.Mounts, Mount{ContainerPath: m.Destination, HostPath: m.Source, Options: m.Options})
	}
	return edits, nil
}

// DecodeCDIEdits reads the CDIEditsAnnotation of a pod's annotations.
func DecodeCDIEdits(annotations map[string]string) (map[string]ContainerEdits, error) {
	raw, ok := annotations[CDIEditsAnnotation]
	if !ok {
		return nil, fmt.Errorf("annotation %s is not set", CDIEditsAnnotation)
	}
	var edits map[string]ContainerEdits
	if err := json.Unmarshal([]byte(raw), &edits); err != nil {
		return nil, fmt.Errorf("decode annotation %s: %w", CDIEditsAnnotation, err)
	}
	return edits, nil
}
