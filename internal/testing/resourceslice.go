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

package testing

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ResourceSliceWrapper builds a ResourceSlice.
type ResourceSliceWrapper struct{ resourceapi.ResourceSlice }

// MakeResourceSlice starts the ResourceSlice of driver for node: its pool is named after the node, as our kubelet
// plugins name theirs, in generation 1 with one slice.
func MakeResourceSlice(driver, node string) *ResourceSliceWrapper {
	return &ResourceSliceWrapper{resourceapi.ResourceSlice{
		TypeMeta:   metav1.TypeMeta{APIVersion: resourceapi.SchemeGroupVersion.String(), Kind: "ResourceSlice"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s", node, driver)},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   driver,
			NodeName: ptr.To(node),
			Pool:     resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
		},
	}}
}

// Obj returns the built ResourceSlice.
func (w *ResourceSliceWrapper) Obj() *resourceapi.ResourceSlice { return &w.ResourceSlice }

// Device adds a device whose string attribute "type" is deviceType (gpu, mig, channel, daemon).
func (w *ResourceSliceWrapper) Device(name, deviceType string) *ResourceSliceWrapper {
	w.Spec.Devices = append(w.Spec.Devices, resourceapi.Device{
		Name:       name,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": {StringValue: ptr.To(deviceType)}},
	})
	return w
}

// DeviceTaint taints the last added device, as the GPU plugin's health monitor taints an unhealthy GPU.
func (w *ResourceSliceWrapper) DeviceTaint(key, value string, effect resourceapi.DeviceTaintEffect) *ResourceSliceWrapper {
	if len(w.Spec.Devices) == 0 {
		panic("DeviceTaint: add a Device first")
	}
	d := &w.Spec.Devices[len(w.Spec.Devices)-1]
	d.Taints = append(d.Taints, resourceapi.DeviceTaint{Key: key, Value: value, Effect: effect})
	return w
}
