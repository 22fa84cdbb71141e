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

package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GpuConfigKind is the kind of GpuConfig.
const GpuConfigKind = "GpuConfig"

// GpuConfig is the opaque configuration of a full GPU (driver gpu.nvidia.com). It is not a custom
// resource: it travels in a ResourceClaim's or DeviceClass's config[].opaque.parameters.
//
// +kubebuilder:object:root=true
type GpuConfig struct {
	metav1.TypeMeta `json:",inline"`

	// sharing says how the workloads holding the GPU share it; unset means no sharing setup: the GPU
	// runs with the driver's defaults.
	// +optional
	Sharing *GpuSharing `json:"sharing,omitempty"`
}

// DefaultGpuConfig returns the configuration a GPU gets when no class or claim config names it.
func DefaultGpuConfig() *GpuConfig {
	return &GpuConfig{TypeMeta: metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: GpuConfigKind}}
}
