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
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DeviceConfig is an opaque device configuration of this package, as DecodeConfig returns it.
//
// +kubebuilder:object:generate=false
type DeviceConfig interface {
	runtime.Object
	// Normalize fills the defaults in place. Call it before Validate.
	Normalize()
	// Validate returns an error naming every invalid field with its path and the allowed values.
	Validate() error
}

var (
	_ DeviceConfig = &GpuConfig{}
	_ DeviceConfig = &MigDeviceConfig{}
	_ DeviceConfig = &ComputeDomainChannelConfig{}
	_ DeviceConfig = &ComputeDomainDaemonConfig{}
	_ DeviceConfig = &VfioDeviceConfig{}
)

// Normalize fills the defaults of the sharing strategy.
func (c *GpuConfig) Normalize() { c.Sharing.Normalize() }

// Validate checks the sharing settings.
func (c *GpuConfig) Validate() error {
	return configError(GpuConfigKind, c.Sharing.Validate(field.NewPath("sharing")))
}

// Normalize fills the defaults of the sharing strategy.
func (c *MigDeviceConfig) Normalize() { c.Sharing.Normalize() }

// Validate checks the sharing settings.
func (c *MigDeviceConfig) Validate() error {
	return configError(MigDeviceConfigKind, c.Sharing.Validate(field.NewPath("sharing")))
}

// Normalize defaults allocationMode to Single.
func (c *ComputeDomainChannelConfig) Normalize() {
	if c.AllocationMode == "" {
		c.AllocationMode = AllocationModeSingle
	}
}

// Validate requires domainID and a known allocationMode.
func (c *ComputeDomainChannelConfig) Validate() error {
	allErrs := validateDomainID(c.DomainID)
	if c.AllocationMode != "" && !slices.Contains(AllocationModes, c.AllocationMode) {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("allocationMode"), c.AllocationMode, AllocationModes))
	}
	return configError(ComputeDomainChannelConfigKind, allErrs)
}

// Normalize has no defaults to fill.
func (c *ComputeDomainDaemonConfig) Normalize() {}

// Validate requires domainID.
func (c *ComputeDomainDaemonConfig) Validate() error {
	return configError(ComputeDomainDaemonConfigKind, validateDomainID(c.DomainID))
}

// Normalize defaults iommu to backendPolicy LegacyOnly without the API device.
func (c *VfioDeviceConfig) Normalize() {
	if c.Iommu == nil {
		c.Iommu = &IOMMUConfig{}
	}
	if c.Iommu.BackendPolicy == "" {
		c.Iommu.BackendPolicy = IOMMUBackendPolicyLegacyOnly
	}
	if c.Iommu.EnableAPIDevice == nil {
		f := false
		c.Iommu.EnableAPIDevice = &f
	}
}

// Validate requires a known iommu.backendPolicy.
func (c *VfioDeviceConfig) Validate() error {
	var allErrs field.ErrorList
	if c.Iommu != nil && c.Iommu.BackendPolicy != "" && !slices.Contains(IOMMUBackendPolicies, c.Iommu.BackendPolicy) {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("iommu", "backendPolicy"), c.Iommu.BackendPolicy, IOMMUBackendPolicies))
	}
	return configError(VfioDeviceConfigKind, allErrs)
}

func validateDomainID(id string) field.ErrorList {
	if id == "" {
		return field.ErrorList{field.Required(field.NewPath("domainID"), "the UID of the ComputeDomain")}
	}
	return nil
}

func configError(kind string, allErrs field.ErrorList) error {
	if len(allErrs) == 0 {
		return nil
	}
	return fmt.Errorf("invalid %s: %w", kind, allErrs.ToAggregate())
}
