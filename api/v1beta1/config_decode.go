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
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
)

// configKinds maps every opaque config kind to a constructor of an empty value.
var configKinds = map[string]func() DeviceConfig{
	GpuConfigKind:                  func() DeviceConfig { return &GpuConfig{} },
	MigDeviceConfigKind:            func() DeviceConfig { return &MigDeviceConfig{} },
	ComputeDomainChannelConfigKind: func() DeviceConfig { return &ComputeDomainChannelConfig{} },
	ComputeDomainDaemonConfigKind:  func() DeviceConfig { return &ComputeDomainDaemonConfig{} },
	VfioDeviceConfigKind:           func() DeviceConfig { return &VfioDeviceConfig{} },
}

// ConfigKinds returns the kinds DecodeConfig accepts, sorted.
func ConfigKinds() []string {
	kinds := make([]string, 0, len(configKinds))
	for k := range configKinds {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return kinds
}

// DecodeConfig decodes the JSON of an opaque device configuration (config[].opaque.parameters) strictly:
// apiVersion must be resource.nvidia.com/v1beta1, kind one of ConfigKinds, and every field must be known
// (matched case-sensitively, no duplicates). Errors name the field and the allowed values. The result is
// neither normalized nor validated.
func DecodeConfig(raw []byte) (DeviceConfig, error) {
	var tm metav1.TypeMeta
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &tm); err != nil {
		return nil, fmt.Errorf("decode opaque config: %w", err)
	}
	var allErrs field.ErrorList
	if tm.APIVersion != GroupVersion.String() {
		allErrs = append(allErrs, badTypeMeta(field.NewPath("apiVersion"), tm.APIVersion, []string{GroupVersion.String()}))
	}
	newConfig, ok := configKinds[tm.Kind]
	if !ok {
		allErrs = append(allErrs, badTypeMeta(field.NewPath("kind"), tm.Kind, ConfigKinds()))
	}
	if len(allErrs) > 0 {
		return nil, fmt.Errorf("decode opaque config: %w", allErrs.ToAggregate())
	}

	cfg := newConfig()
	strictErrs, err := sigsjson.UnmarshalStrict(raw, cfg)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", tm.Kind, err)
	}
	if len(strictErrs) > 0 {
		return nil, fmt.Errorf("decode %s: %w", tm.Kind, errors.Join(strictErrs...))
	}
	return cfg, nil
}

func badTypeMeta(fldPath *field.Path, value string, allowed []string) *field.Error {
	if value == "" {
		return field.Required(fldPath, fmt.Sprintf("supported values: %s", quoteAll(allowed)))
	}
	return field.NotSupported(fldPath, value, allowed)
}
