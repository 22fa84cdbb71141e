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
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

func opaqueConfig(source resourceapi.AllocationConfigSource, driver, params string) resourceapi.DeviceAllocationConfiguration {
	return resourceapi.DeviceAllocationConfiguration{
		Source: source,
		DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
			Driver: driver, Parameters: runtime.RawExtension{Raw: []byte(params)},
		}},
	}
}

func timeSlicing(interval string) string {
	return `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"` + interval + `"}}}`
}

func TestResolveOpaqueConfig(t *testing.T) {
	result := resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: "gpu.nvidia.com", Pool: "node", Device: "gpu-0"}
	errMissing := errors.New("no config")
	cases := map[string]struct {
		configs      []resourceapi.DeviceAllocationConfiguration
		wantInterval string
		wantErr      string
	}{
		"a claim config wins over a class config listed after it": {
			configs: []resourceapi.DeviceAllocationConfiguration{
				opaqueConfig(resourceapi.AllocationConfigSourceClaim, "gpu.nvidia.com", timeSlicing("Long")),
				opaqueConfig(resourceapi.AllocationConfigSourceClass, "gpu.nvidia.com", timeSlicing("Short")),
			},
			wantInterval: "Long",
		},
		"another driver's config and a non-opaque one are skipped": {
			configs: []resourceapi.DeviceAllocationConfiguration{
				opaqueConfig(resourceapi.AllocationConfigSourceClaim, "gpu.nvidia.com", timeSlicing("Short")),
				opaqueConfig(resourceapi.AllocationConfigSourceClaim, "other.example.com", timeSlicing("Long")),
				{Source: resourceapi.AllocationConfigSourceClaim},
			},
			wantInterval: "Short",
		},
		"no applicable config asks the caller": {
			configs: []resourceapi.DeviceAllocationConfiguration{opaqueConfig(resourceapi.AllocationConfigSourceClaim, "other.example.com", timeSlicing("Long"))},
			wantErr: "no config",
		},
		"an overridden config that does not decode still fails, naming its source": {
			configs: []resourceapi.DeviceAllocationConfiguration{
				opaqueConfig(resourceapi.AllocationConfigSourceClass, "gpu.nvidia.com", `{"kind":"Nonsense"}`),
				opaqueConfig(resourceapi.AllocationConfigSourceClaim, "gpu.nvidia.com", timeSlicing("Long")),
			},
			wantErr: `config from DeviceClass for request "gpu"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg, err := ResolveOpaqueConfig("gpu.nvidia.com", tc.configs, result, apiv1beta1.DeviceTypeGpu, func(resourceapi.DeviceRequestAllocationResult, string) (apiv1beta1.DeviceConfig, error) {
				return nil, errMissing
			})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			gpuCfg, ok := cfg.(*apiv1beta1.GpuConfig)
			if !ok || gpuCfg.Sharing == nil || gpuCfg.Sharing.TimeSlicingConfig == nil || gpuCfg.Sharing.TimeSlicingConfig.Interval == nil {
				t.Fatalf("config %#v, want a time-sliced GpuConfig", cfg)
			}
			if diff := cmp.Diff(tc.wantInterval, string(*gpuCfg.Sharing.TimeSlicingConfig.Interval)); diff != "" {
				t.Errorf("interval (-want +got):\n%s", diff)
			}
		})
	}
}
