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

package webhook

import (
	"fmt"
	"slices"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// Drivers names the two DRA drivers whose opaque configs the webhook checks, and which config kinds each takes.
type Drivers struct {
	// GPU is the gpu.nvidia.com driver: GpuConfig, MigDeviceConfig and VfioDeviceConfig.
	GPU string
	// ComputeDomain is the compute-domain.nvidia.com driver: ComputeDomainChannelConfig and
	// ComputeDomainDaemonConfig.
	ComputeDomain string
}

// kindsFor returns the config kinds driver accepts; ok is false for a driver that is not ours.
func (d Drivers) kindsFor(driver string) (kinds []string, ok bool) {
	switch driver {
	case d.GPU:
		return []string{apiv1beta1.GpuConfigKind, apiv1beta1.MigDeviceConfigKind, apiv1beta1.VfioDeviceConfigKind}, true
	case d.ComputeDomain:
		return []string{apiv1beta1.ComputeDomainChannelConfigKind, apiv1beta1.ComputeDomainDaemonConfigKind}, true
	}
	return nil, false
}

// ValidateClaimSpec checks every opaque config in spec addressed to one of our drivers the way the kubelet
// plugin will at prepare time: strict decoding (unknown or misspelled fields are errors), a kind the driver
// takes, and valid values after defaults. Configs of other drivers are left alone. Each error's path is the
// config's place in the object (fldPath is the path of spec), and its message names the bad field.
func ValidateClaimSpec(spec *resourcev1.ResourceClaimSpec, drivers Drivers, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, c := range spec.Devices.Config {
		if c.Opaque == nil {
			continue
		}
		kinds, ours := drivers.kindsFor(c.Opaque.Driver)
		if !ours {
			continue
		}
		path := fldPath.Child("devices", "config").Index(i).Child("opaque", "parameters")
		cfg, err := apiv1beta1.DecodeConfig(c.Opaque.Parameters.Raw)
		if err != nil {
			allErrs = append(allErrs, field.Invalid(path, string(c.Opaque.Parameters.Raw), err.Error()))
			continue
		}
		kind := apiv1beta1.ConfigKind(cfg)
		if !slices.Contains(kinds, kind) {
			allErrs = append(allErrs, field.Invalid(path.Child("kind"), kind,
				fmt.Sprintf("driver %s takes %v", c.Opaque.Driver, kinds)))
			continue
		}
		cfg.Normalize()
		if err := cfg.Validate(); err != nil {
			allErrs = append(allErrs, field.Invalid(path, string(c.Opaque.Parameters.Raw), err.Error()))
		}
	}
	return allErrs
}
