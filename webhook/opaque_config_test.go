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
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

var ourDrivers = Drivers{GPU: apiv1beta1.GPUDriverName, ComputeDomain: apiv1beta1.ComputeDomainDriverName}

func specWith(configs ...resourcev1.DeviceClaimConfiguration) *resourcev1.ResourceClaimSpec {
	return &resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Config: configs}}
}

func opaque(driver, parameters string) resourcev1.DeviceClaimConfiguration {
	return resourcev1.DeviceClaimConfiguration{DeviceConfiguration: resourcev1.DeviceConfiguration{
		Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: driver, Parameters: runtime.RawExtension{Raw: []byte(parameters)}},
	}}
}

func TestValidateClaimSpec(t *testing.T) {
	const uid = "8d3c5e2a-1b4f-4c2e-9a7d-0f6e5d4c3b2a"
	cases := map[string]struct {
		spec *resourcev1.ResourceClaimSpec
		// wantErrs are, per error, its field path and a piece of its message; nil: valid.
		wantErrs [][2]string
	}{
		"no config at all is valid": {spec: specWith()},
		"a valid GpuConfig": {
			spec: specWith(opaque("gpu.nvidia.com", `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig"}`)),
		},
		"a valid channel config for the compute-domain driver": {
			spec: specWith(opaque("compute-domain.nvidia.com", `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","domainID":"`+uid+`"}`)),
		},
		"NVIDIA's VfioDeviceConfig for the GPU driver": {
			spec: specWith(opaque("gpu.nvidia.com", `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"VfioDeviceConfig","iommu":{"backendPolicy":"LegacyOnly","enableAPIDevice":true}}`)),
		},
		"a VfioDeviceConfig with an unknown backend policy names the allowed ones": {
			spec:     specWith(opaque("gpu.nvidia.com", `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"VfioDeviceConfig","iommu":{"backendPolicy":"Iommufd"}}`)),
			wantErrs: [][2]string{{"spec.devices.config[0].opaque.parameters", `supported values: "LegacyOnly", "PreferIommuFD"`}},
		},
		"another driver's config is not ours to judge": {
			spec: specWith(opaque("example.com", `{"kind":"Whatever","bogus":1}`)),
		},
		"an unknown field is named": {
			spec:     specWith(opaque("gpu.nvidia.com", `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfg":{}}}`)),
			wantErrs: [][2]string{{"spec.devices.config[0].opaque.parameters", "mpsConfg"}},
		},
		"a wrong apiVersion names the allowed one": {
			spec:     specWith(opaque("gpu.nvidia.com", `{"apiVersion":"resource.nvidia.com/v1","kind":"GpuConfig"}`)),
			wantErrs: [][2]string{{"spec.devices.config[0].opaque.parameters", "resource.nvidia.com/v1beta1"}},
		},
		"a GPU config sent to the compute-domain driver": {
			spec:     specWith(opaque("compute-domain.nvidia.com", `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig"}`)),
			wantErrs: [][2]string{{"spec.devices.config[0].opaque.parameters.kind", "driver compute-domain.nvidia.com takes"}},
		},
		"a bad value after defaults": {
			spec:     specWith(opaque("compute-domain.nvidia.com", `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","domainID":"`+uid+`","allocationMode":"Some"}`)),
			wantErrs: [][2]string{{"spec.devices.config[0].opaque.parameters", "allocationMode"}},
		},
		"every bad config is reported, in place": {
			spec: specWith(
				opaque("gpu.nvidia.com", `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig"}`),
				opaque("gpu.nvidia.com", `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","x":1}`),
				opaque("compute-domain.nvidia.com", `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainDaemonConfig"}`),
			),
			wantErrs: [][2]string{{"spec.devices.config[1].opaque.parameters", `"x"`}, {"spec.devices.config[2].opaque.parameters", "domainID"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := ValidateClaimSpec(tc.spec, ourDrivers, field.NewPath("spec"))
			if len(errs) != len(tc.wantErrs) {
				t.Fatalf("got %d errors %v, want %d", len(errs), errs, len(tc.wantErrs))
			}
			for i, want := range tc.wantErrs {
				if errs[i].Field != want[0] || !strings.Contains(errs[i].Error(), want[1]) {
					t.Errorf("error %d = %q at %s; want one at %s saying %q", i, errs[i].Error(), errs[i].Field, want[0], want[1])
				}
			}
		})
	}
}
