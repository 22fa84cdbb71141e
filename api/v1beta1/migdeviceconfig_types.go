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

// MigDeviceConfigKind is the kind of MigDeviceConfig.
const MigDeviceConfigKind = "MigDeviceConfig"

// MigDeviceConfig is the opaque configuration of a MIG device (driver gpu.nvidia.com). It is not a
// custom resource: it travels in a ResourceClaim's or DeviceClass's config[].opaque.parameters.
//
// +kubebuilder:object:root=true
type MigDeviceConfig struct {
	metav1.TypeMeta `json:",inline"`

	// sharing says how the workloads holding the MIG device share it; unset means no sharing setup.
	// +optional
	Sharing *MigDeviceSharing `json:"sharing,omitempty"`
}

// DefaultMigDeviceConfig returns the configuration a MIG device gets when no class or claim config names it.
func DefaultMigDeviceConfig() *MigDeviceConfig {
	return &MigDeviceConfig{TypeMeta: metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: MigDeviceConfigKind}}
}
