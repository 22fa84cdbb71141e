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

package gpu

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
)

func opaque(source resourceapi.AllocationConfigSource, driver, params string, requests ...string) resourceapi.DeviceAllocationConfiguration {
	return resourceapi.DeviceAllocationConfiguration{
		Source: source, Requests: requests,
		DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
			Driver: driver, Parameters: runtime.RawExtension{Raw: []byte(params)},
		}},
	}
}

const (
	tsShort  = `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Short"}}}`
	tsLong   = `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Long"}}}`
	migMPS   = `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{"strategy":"MPS"}}`
	typo     = `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfg":{}}}`
	badValue = `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"Spatial"}}`
)

func TestResolveConfig(t *testing.T) {
	result := resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: testDriver, Pool: "node", Device: "gpu-0"}
	cases := map[string]struct {
		configs    []resourceapi.DeviceAllocationConfiguration
		deviceType string
		want       string // interval, or "" for no sharing
		wantErr    string
	}{
		"no config gives the default GPU config": {
			deviceType: "gpu",
		},
		"a class config applies": {
			configs:    []resourceapi.DeviceAllocationConfiguration{opaque(resourceapi.AllocationConfigSourceClass, testDriver, tsShort)},
			deviceType: "gpu", want: "Short",
		},
		"a claim config wins over a class config listed after it": {
			configs: []resourceapi.DeviceAllocationConfiguration{
				opaque(resourceapi.AllocationConfigSourceClaim, testDriver, tsLong),
				opaque(resourceapi.AllocationConfigSourceClass, testDriver, tsShort),
			},
			deviceType: "gpu", want: "Long",
		},
		"among claim configs the later one wins": {
			configs: []resourceapi.DeviceAllocationConfiguration{
				opaque(resourceapi.AllocationConfigSourceClaim, testDriver, tsLong),
				opaque(resourceapi.AllocationConfigSourceClaim, testDriver, tsShort),
			},
			deviceType: "gpu", want: "Short",
		},
		"a config for another request does not apply": {
			configs:    []resourceapi.DeviceAllocationConfiguration{opaque(resourceapi.AllocationConfigSourceClaim, testDriver, tsShort, "other")},
			deviceType: "gpu",
		},
		"a config for another driver is ignored, even if it would not decode": {
			configs:    []resourceapi.DeviceAllocationConfiguration{opaque(resourceapi.AllocationConfigSourceClaim, "compute-domain.nvidia.com", `{"kind":"Whatever"}`)},
			deviceType: "gpu",
		},
		"an unknown field is an error": {
			configs:    []resourceapi.DeviceAllocationConfiguration{opaque(resourceapi.AllocationConfigSourceClaim, testDriver, typo)},
			deviceType: "gpu", wantErr: "timeSlicingConfg",
		},
		"an overridden config is still checked": {
			configs: []resourceapi.DeviceAllocationConfiguration{
				opaque(resourceapi.AllocationConfigSourceClass, testDriver, typo),
				opaque(resourceapi.AllocationConfigSourceClaim, testDriver, tsShort),
			},
			deviceType: "gpu", wantErr: "DeviceClass",
		},
		"a MIG config on a full GPU is an error naming the right kind": {
			configs:    []resourceapi.DeviceAllocationConfiguration{opaque(resourceapi.AllocationConfigSourceClaim, testDriver, migMPS)},
			deviceType: "gpu", wantErr: "use a GpuConfig",
		},
		"an invalid value names the allowed ones": {
			configs:    []resourceapi.DeviceAllocationConfiguration{opaque(resourceapi.AllocationConfigSourceClaim, testDriver, badValue)},
			deviceType: "gpu", wantErr: "TimeSlicing",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg, err := draplugin.ResolveOpaqueConfig(testDriver, tc.configs, result, tc.deviceType, defaultConfig)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if _, ts, _ := sharingOf(cfg); ts != nil && ts.Interval != nil {
				got = string(*ts.Interval)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("interval (-want +got):\n%s", diff)
			}
			if _, ok := cfg.(*apiv1beta1.GpuConfig); !ok {
				t.Errorf("config type %T, want *GpuConfig", cfg)
			}
		})
	}
}
