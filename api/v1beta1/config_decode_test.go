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

package v1beta1_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

// quantityEqual compares resource.Quantity values by amount (they have unexported caches).
var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestDecodeConfig(t *testing.T) {
	cases := map[string]struct {
		raw     string
		want    v1beta1.DeviceConfig
		wantErr string
	}{
		"a GpuConfig with time slicing decodes": {
			raw:  `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Long"}}}`,
			want: utiltesting.MakeGpuConfig().TimeSlicing(v1beta1.LongTimeSlice).Obj(),
		},
		"a GpuConfig with every MPS setting decodes": {
			raw: `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{` +
				`"defaultActiveThreadPercentage":50,"defaultPinnedDeviceMemoryLimit":"10Gi",` +
				`"defaultPerDevicePinnedMemoryLimit":{"0":"5Gi","GPU-1234":"1Gi"},"multiUser":true}}}`,
			want: utiltesting.MakeGpuConfig().MPS(utiltesting.MakeMpsConfig().ActiveThreadPercentage(50).
				PinnedMemoryLimit("10Gi").PerDevicePinnedMemoryLimit("0", "5Gi").PerDevicePinnedMemoryLimit("GPU-1234", "1Gi").
				MultiUser(true).Obj()).Obj(),
		},
		"a GpuConfig without sharing decodes": {
			raw:  `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig"}`,
			want: utiltesting.MakeGpuConfig().Obj(),
		},
		"a MigDeviceConfig with MPS decodes": {
			raw:  `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":20}}}`,
			want: utiltesting.MakeMigDeviceConfig().MPS(utiltesting.MakeMpsConfig().ActiveThreadPercentage(20).Obj()).Obj(),
		},
		"a ComputeDomainChannelConfig decodes": {
			raw:  `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","domainID":"uid-1","allocationMode":"All"}`,
			want: utiltesting.MakeComputeDomainChannelConfig("uid-1").AllocationMode(v1beta1.AllocationModeAll).Obj(),
		},
		"a ComputeDomainDaemonConfig decodes": {
			raw:  `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainDaemonConfig","domainID":"uid-1"}`,
			want: utiltesting.MakeComputeDomainDaemonConfig("uid-1"),
		},
		"a VfioDeviceConfig as NVIDIA's VFIO demo writes it decodes": {
			raw:  `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"VfioDeviceConfig","iommu":{"backendPolicy":"LegacyOnly","enableAPIDevice":true}}`,
			want: utiltesting.MakeVfioDeviceConfig().Iommu(v1beta1.IOMMUBackendPolicyLegacyOnly, utiltesting.APIDevice(true)).Obj(),
		},
		"a VfioDeviceConfig field spelled as another casing is unknown": {
			raw:     `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"VfioDeviceConfig","iommu":{"enableApiDevice":true}}`,
			wantErr: `decode VfioDeviceConfig: unknown field "iommu.enableApiDevice"`,
		},
		"an unknown top-level field is rejected by name": {
			raw:     `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharnig":{}}`,
			wantErr: `decode GpuConfig: unknown field "sharnig"`,
		},
		"an unknown nested field is rejected with its path": {
			raw:     `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"activeThreadPercentage":50}}}`,
			wantErr: `decode GpuConfig: unknown field "sharing.mpsConfig.activeThreadPercentage"`,
		},
		"a field spelled with the wrong case is unknown": {
			raw:     `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","domainId":"uid-1"}`,
			wantErr: `decode ComputeDomainChannelConfig: unknown field "domainId"`,
		},
		"a MIG device has no time slicing config": {
			raw:     `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Short"}}}`,
			wantErr: `decode MigDeviceConfig: unknown field "sharing.timeSlicingConfig"`,
		},
		"a duplicate field is rejected": {
			raw:     `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainDaemonConfig","domainID":"a","domainID":"b"}`,
			wantErr: `decode ComputeDomainDaemonConfig: duplicate field "domainID"`,
		},
		"a wrong kind is rejected naming the supported kinds": {
			raw: `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GPUConfig"}`,
			wantErr: `decode opaque config: kind: Unsupported value: "GPUConfig": supported values: ` +
				`"ComputeDomainChannelConfig", "ComputeDomainDaemonConfig", "GpuConfig", "MigDeviceConfig", "VfioDeviceConfig"`,
		},
		"a missing kind is rejected naming the supported kinds": {
			raw: `{"apiVersion":"resource.nvidia.com/v1beta1"}`,
			wantErr: `decode opaque config: kind: Required value: supported values: ` +
				`"ComputeDomainChannelConfig", "ComputeDomainDaemonConfig", "GpuConfig", "MigDeviceConfig", "VfioDeviceConfig"`,
		},
		"an older apiVersion is rejected naming the supported one": {
			raw:     `{"apiVersion":"resource.nvidia.com/v1alpha1","kind":"GpuConfig"}`,
			wantErr: `decode opaque config: apiVersion: Unsupported value: "resource.nvidia.com/v1alpha1": supported values: "resource.nvidia.com/v1beta1"`,
		},
		"another group is rejected naming the supported apiVersion": {
			raw:     `{"apiVersion":"gpu.nvidia.com/v1beta1","kind":"GpuConfig"}`,
			wantErr: `decode opaque config: apiVersion: Unsupported value: "gpu.nvidia.com/v1beta1": supported values: "resource.nvidia.com/v1beta1"`,
		},
		"a missing apiVersion and kind are both reported": {
			raw: `{}`,
			wantErr: `decode opaque config: [apiVersion: Required value: supported values: "resource.nvidia.com/v1beta1", ` +
				`kind: Required value: supported values: "ComputeDomainChannelConfig", "ComputeDomainDaemonConfig", "GpuConfig", "MigDeviceConfig", "VfioDeviceConfig"]`,
		},
		"a value of the wrong JSON type is rejected": {
			raw:     `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":"50"}}}`,
			wantErr: `decode GpuConfig: json: cannot unmarshal string into Go struct field MpsConfig.sharing.mpsConfig.defaultActiveThreadPercentage of type int`,
		},
		"a negative quantity still decodes (Validate rejects it)": {
			raw:  `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultPinnedDeviceMemoryLimit":"-1Gi"}}}`,
			want: utiltesting.MakeGpuConfig().MPS(utiltesting.MakeMpsConfig().PinnedMemoryLimit("-1Gi").Obj()).Obj(),
		},
		"text that is not JSON is rejected": {
			raw:     `kind: GpuConfig`,
			wantErr: `decode opaque config: invalid character 'k' looking for beginning of value`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := v1beta1.DecodeConfig([]byte(tc.raw))
			if diff := cmp.Diff(tc.wantErr, errText(err)); diff != "" {
				t.Errorf("DecodeConfig() error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, got, quantityEqual); diff != "" {
				t.Errorf("DecodeConfig() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeConfigRoundTrip(t *testing.T) {
	cases := map[string]v1beta1.DeviceConfig{
		"GpuConfig with MPS": utiltesting.MakeGpuConfig().MPS(utiltesting.MakeMpsConfig().ActiveThreadPercentage(10).
			PinnedMemoryLimit("1Gi").PerDevicePinnedMemoryLimit("1", "2Gi").Obj()).Obj(),
		"GpuConfig with time slicing": utiltesting.MakeGpuConfig().TimeSlicing(v1beta1.ShortTimeSlice).Obj(),
		"MigDeviceConfig with MPS":    utiltesting.MakeMigDeviceConfig().MPS(utiltesting.MakeMpsConfig().Obj()).Obj(),
		"ComputeDomainChannelConfig":  utiltesting.MakeComputeDomainChannelConfig("uid").AllocationMode(v1beta1.AllocationModeSingle).Obj(),
		"ComputeDomainDaemonConfig":   utiltesting.MakeComputeDomainDaemonConfig("uid"),
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			raw, err := json.Marshal(cfg)
			if err != nil {
				t.Fatalf("Marshal() = %v", err)
			}
			got, err := v1beta1.DecodeConfig(raw)
			if err != nil {
				t.Fatalf("DecodeConfig(%s) = %v", raw, err)
			}
			if diff := cmp.Diff(cfg, got, quantityEqual); diff != "" {
				t.Errorf("DecodeConfig(Marshal(cfg)) (-want +got):\n%s", diff)
			}
		})
	}
}
