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
	"k8s.io/utils/ptr"
)

// VfioDeviceConfigKind is the kind of VfioDeviceConfig.
const VfioDeviceConfigKind = "VfioDeviceConfig"

// VfioDeviceConfig is the opaque configuration of a GPU handed to a virtual machine through VFIO (driver
// gpu.nvidia.com, device type vfio; feature gate PassthroughSupport). Its names and fields are NVIDIA's.
//
// +kubebuilder:object:root=true
type VfioDeviceConfig struct {
	metav1.TypeMeta `json:",inline"`

	// iommu selects the IOMMU backend whose device nodes the claim gets; unset is the defaults
	// (backendPolicy LegacyOnly, enableAPIDevice false).
	// +optional
	Iommu *IOMMUConfig `json:"iommu,omitempty"`
}

// IOMMUBackendPolicy selects the IOMMU backend of VFIO devices.
// +kubebuilder:validation:Enum=LegacyOnly;PreferIommuFD
type IOMMUBackendPolicy string

// IOMMU backend policies.
const (
	// IOMMUBackendPolicyLegacyOnly hands out the VFIO group device /dev/vfio/<iommu group> (and
	// /dev/vfio/vfio as the API device).
	IOMMUBackendPolicyLegacyOnly IOMMUBackendPolicy = "LegacyOnly"
	// IOMMUBackendPolicyPreferIommuFD hands out the device's iommufd character device
	// /dev/vfio/devices/vfio<N> (and /dev/iommu as the API device) when the host has /dev/iommu, and
	// falls back to LegacyOnly otherwise.
	IOMMUBackendPolicyPreferIommuFD IOMMUBackendPolicy = "PreferIommuFD"
)

// IOMMUBackendPolicies are the allowed values of iommu.backendPolicy.
var IOMMUBackendPolicies = []IOMMUBackendPolicy{IOMMUBackendPolicyLegacyOnly, IOMMUBackendPolicyPreferIommuFD}

// IOMMUConfig selects the IOMMU backend of a claim's VFIO devices.
type IOMMUConfig struct {
	// backendPolicy is LegacyOnly (default) or PreferIommuFD.
	// +optional
	BackendPolicy IOMMUBackendPolicy `json:"backendPolicy"`
	// enableAPIDevice adds the IOMMU API device, /dev/vfio/vfio (LegacyOnly) or /dev/iommu (iommufd), to
	// the claim. Default false.
	// +optional
	EnableAPIDevice *bool `json:"enableAPIDevice,omitempty"`
}

// DefaultVfioDeviceConfig returns the configuration a VFIO device gets when no class or claim config
// names it.
func DefaultVfioDeviceConfig() *VfioDeviceConfig {
	c := &VfioDeviceConfig{TypeMeta: metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: VfioDeviceConfigKind}}
	c.Normalize()
	return c
}

// PreferIommuFD is true when the config asks for the iommufd backend.
func (c *VfioDeviceConfig) PreferIommuFD() bool {
	return c.Iommu != nil && c.Iommu.BackendPolicy == IOMMUBackendPolicyPreferIommuFD
}

// APIDevice is true when the config asks for the IOMMU API device.
func (c *VfioDeviceConfig) APIDevice() bool {
	return c.Iommu != nil && ptr.Deref(c.Iommu.EnableAPIDevice, false)
}
