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

package simcluster

import (
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/testdriver"
)

// CliqueAttribute is the device attribute (in the driver's domain) that
// carries the node's NVLink clique.
const CliqueAttribute = "cliqueID"

// nvidiaMajor is the character-device major of /dev/nvidia*.
const nvidiaMajor = 195

// TestDriverDevices are the devices the test driver publishes for a node:
// one "gpu" device per GPU, or, on a MIG profile, one "mig" device per static
// MIG slice. Names and attributes follow the compatible public names.
func TestDriverDevices(spec topology.NodeSpec) []testdriver.Device {
	p := spec.Profile
	var devices []testdriver.Device
	for minor := range p.GPUs {
		uuid := gpuUUID(spec.Name, minor)
		common := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"productName":  {StringValue: ptr.To(p.ProductName)},
			"architecture": {StringValue: ptr.To(p.Architecture)},
			"brand":        {StringValue: ptr.To("Nvidia")},
		}
		if spec.CliqueID != "" {
			common[CliqueAttribute] = resourceapi.DeviceAttribute{StringValue: ptr.To(spec.CliqueID)}
		}
		node := cdispec.DeviceNode{Path: fmt.Sprintf("/dev/nvidia%d", minor), Type: "c", Major: nvidiaMajor, Minor: int64(minor)}
		if len(p.MIG) == 0 {
			attrs := copyAttrs(common)
			attrs["type"] = resourceapi.DeviceAttribute{StringValue: ptr.To("gpu")}
			attrs["uuid"] = resourceapi.DeviceAttribute{StringValue: ptr.To(uuid)}
			attrs["index"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(minor))}
			devices = append(devices, testdriver.Device{
				API: resourceapi.Device{
					Name:       fmt.Sprintf("gpu-%d", minor),
					Attributes: attrs,
					Capacity:   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: *resource.NewQuantity(p.MemoryBytes, resource.BinarySI)}},
				},
				Edits: cdispec.ContainerEdits{
					Env:         []string{deviceEnv(fmt.Sprintf("gpu-%d", minor), uuid)},
					DeviceNodes: []*cdispec.DeviceNode{&node},
				},
			})
			continue
		}
		for _, slice := range p.MIG {
			migUUID := "MIG-" + uuid[len("GPU-"):] + fmt.Sprintf("-%d-%d", slice.GIProfileID, slice.PlacementStart)
			attrs := copyAttrs(common)
			attrs["type"] = resourceapi.DeviceAttribute{StringValue: ptr.To("mig")}
			attrs["uuid"] = resourceapi.DeviceAttribute{StringValue: ptr.To(migUUID)}
			attrs["parentUUID"] = resourceapi.DeviceAttribute{StringValue: ptr.To(uuid)}
			attrs["profile"] = resourceapi.DeviceAttribute{StringValue: ptr.To(slice.Profile)}
			devices = append(devices, testdriver.Device{
				API: resourceapi.Device{
					Name:       topology.MIGDeviceName(minor, slice),
					Attributes: attrs,
					Capacity:   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: *resource.NewQuantity(slice.MemoryBytes, resource.BinarySI)}},
				},
				Edits: cdispec.ContainerEdits{
					Env:         []string{deviceEnv(topology.MIGDeviceName(minor, slice), migUUID)},
					DeviceNodes: []*cdispec.DeviceNode{&node},
				},
			})
		}
	}
	return devices
}

// deviceEnv is NVIDIA_DRA_DEVICE_<NAME>=<uuid>, the GPU plugin's convention.
func deviceEnv(device, uuid string) string {
	return "NVIDIA_DRA_DEVICE_" + strings.ToUpper(strings.ReplaceAll(device, "-", "_")) + "=" + uuid
}

func copyAttrs(in map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	out := make(map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, len(in)+4)
	for k, v := range in {
		out[k] = v
	}
	return out
}

// gpuUUID is a stable "GPU-…" UUID for a node's GPU.
func gpuUUID(node string, minor int) string {
	s := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", node, minor)))
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
}
