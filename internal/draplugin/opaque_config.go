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

package draplugin

import (
	"fmt"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceclaim"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// MissingConfigFunc decides for a device without any opaque config: a
// default, or an error.
type MissingConfigFunc func(result resourceapi.DeviceRequestAllocationResult, deviceType string) (apiv1beta1.DeviceConfig, error)

// ResolveOpaqueConfig returns the effective opaque configuration of one
// allocated device: the configs for driverName that apply to the device's
// request, DeviceClass configs first and then claim configs, each in listed
// order; the last one wins. Every applicable config is decoded strictly and
// must be of the kind for deviceType, even when a later one overrides it, so a
// typo never goes unnoticed. Without any, missing decides: a default, or an
// error. The result is normalized and validated.
func ResolveOpaqueConfig(driverName string, configs []resourceapi.DeviceAllocationConfiguration, result resourceapi.DeviceRequestAllocationResult, deviceType string, missing MissingConfigFunc) (apiv1beta1.DeviceConfig, error) {
	applicable := resourceclaim.ConfigForResult(configs, result)
	applicable = slices.DeleteFunc(applicable, func(c resourceapi.DeviceAllocationConfiguration) bool {
		return c.Opaque == nil || c.Opaque.Driver != driverName
	})
	// Stable: keeps the listed order within each source.
	slices.SortStableFunc(applicable, func(a, b resourceapi.DeviceAllocationConfiguration) int {
		return sourceRank(a.Source) - sourceRank(b.Source)
	})
	var effective apiv1beta1.DeviceConfig
	for _, c := range applicable {
		cfg, err := apiv1beta1.DecodeConfig(c.Opaque.Parameters.Raw)
		if err != nil {
			return nil, fmt.Errorf("config from %s for request %q: %w", sourceName(c.Source), result.Request, err)
		}
		if err := apiv1beta1.CheckConfigAppliesTo(cfg, deviceType); err != nil {
			return nil, fmt.Errorf("config from %s for request %q, device %s: %w", sourceName(c.Source), result.Request, result.Device, err)
		}
		effective = cfg
	}
	if effective == nil {
		def, err := missing(result, deviceType)
		if err != nil {
			return nil, err
		}
		effective = def
	}
	effective.Normalize()
	if err := effective.Validate(); err != nil {
		return nil, fmt.Errorf("request %q, device %s: %w", result.Request, result.Device, err)
	}
	return effective, nil
}

func sourceRank(s resourceapi.AllocationConfigSource) int {
	if s == resourceapi.AllocationConfigSourceClass {
		return 0
	}
	return 1
}

func sourceName(s resourceapi.AllocationConfigSource) string {
	if s == resourceapi.AllocationConfigSourceClass {
		return "DeviceClass"
	}
	return "ResourceClaim"
}
