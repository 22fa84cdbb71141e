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
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

func TestNormalize(t *testing.T) {
	cases := map[string]struct {
		cfg  v1beta1.DeviceConfig
		want v1beta1.DeviceConfig
	}{
		"a GPU without sharing stays without sharing": {
			cfg:  utiltesting.MakeGpuConfig().Obj(),
			want: utiltesting.MakeGpuConfig().Obj(),
		},
		"a VFIO device without iommu gets LegacyOnly without the API device, as NVIDIA's": {
			cfg:  utiltesting.MakeVfioDeviceConfig().Obj(),
			want: utiltesting.MakeVfioDeviceConfig().Iommu(v1beta1.IOMMUBackendPolicyLegacyOnly, utiltesting.APIDevice(false)).Obj(),
		},
		"a VFIO device's API device stays when the policy is defaulted": {
			cfg:  utiltesting.MakeVfioDeviceConfig().Iommu("", utiltesting.APIDevice(true)).Obj(),
			want: utiltesting.MakeVfioDeviceConfig().Iommu(v1beta1.IOMMUBackendPolicyLegacyOnly, utiltesting.APIDevice(true)).Obj(),
		},
		"GPU time slicing without config gets the Default interval": {
			cfg:  utiltesting.MakeGpuConfig().TimeSlicing("").Obj(),
			want: utiltesting.MakeGpuConfig().TimeSlicing(v1beta1.DefaultTimeSlice).Obj(),
		},
		"GPU time slicing with an empty config gets the Default interval": {
			cfg:  utiltesting.MakeGpuConfig().TimeSlicing("").TimeSlicingConfig(&v1beta1.TimeSlicingConfig{}).Obj(),
			want: utiltesting.MakeGpuConfig().TimeSlicing(v1beta1.DefaultTimeSlice).Obj(),
		},
		"GPU time slicing keeps a chosen interval": {
			cfg:  utiltesting.MakeGpuConfig().TimeSlicing(v1beta1.MediumTimeSlice).Obj(),
			want: utiltesting.MakeGpuConfig().TimeSlicing(v1beta1.MediumTimeSlice).Obj(),
		},
		"GPU MPS without config gets an empty MPS config": {
			cfg:  utiltesting.MakeGpuConfig().MPS(nil).Obj(),
			want: utiltesting.MakeGpuConfig().MPS(&v1beta1.MpsConfig{}).Obj(),
		},
		"GPU MPS keeps its limits": {
			cfg:  utiltesting.MakeGpuConfig().MPS(utiltesting.MakeMpsConfig().ActiveThreadPercentage(30).Obj()).Obj(),
			want: utiltesting.MakeGpuConfig().MPS(utiltesting.MakeMpsConfig().ActiveThreadPercentage(30).Obj()).Obj(),
		},
		"a MIG device without sharing stays without sharing": {
			cfg:  utiltesting.MakeMigDeviceConfig().Obj(),
			want: utiltesting.MakeMigDeviceConfig().Obj(),
		},
		"MIG time slicing has nothing to default": {
			cfg:  utiltesting.MakeMigDeviceConfig().Strategy(v1beta1.TimeSlicingStrategy).Obj(),
			want: utiltesting.MakeMigDeviceConfig().Strategy(v1beta1.TimeSlicingStrategy).Obj(),
		},
		"MIG MPS without config gets an empty MPS config": {
			cfg:  utiltesting.MakeMigDeviceConfig().MPS(nil).Obj(),
			want: utiltesting.MakeMigDeviceConfig().MPS(&v1beta1.MpsConfig{}).Obj(),
		},
		"a channel config without allocation mode gets Single": {
			cfg:  utiltesting.MakeComputeDomainChannelConfig("uid").Obj(),
			want: utiltesting.MakeComputeDomainChannelConfig("uid").AllocationMode(v1beta1.AllocationModeSingle).Obj(),
		},
		"a channel config keeps All": {
			cfg:  utiltesting.MakeComputeDomainChannelConfig("uid").AllocationMode(v1beta1.AllocationModeAll).Obj(),
			want: utiltesting.MakeComputeDomainChannelConfig("uid").AllocationMode(v1beta1.AllocationModeAll).Obj(),
		},
		"a daemon config has nothing to default": {
			cfg:  utiltesting.MakeComputeDomainDaemonConfig("uid"),
			want: utiltesting.MakeComputeDomainDaemonConfig("uid"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.cfg.Normalize()
			if diff := cmp.Diff(tc.want, tc.cfg, quantityEqual); diff != "" {
				t.Errorf("Normalize() (-want +got):\n%s", diff)
			}
			if err := tc.cfg.Validate(); err != nil {
				t.Errorf("Validate() after Normalize() = %v, want nil", err)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	mps := utiltesting.MakeMpsConfig
	cases := map[string]struct {
		cfg     v1beta1.DeviceConfig
		wantErr string
	}{
		"a GPU without sharing is valid": {
			cfg: utiltesting.MakeGpuConfig().Obj(),
		},
		"GPU time slicing with the Long interval is valid": {
			cfg: utiltesting.MakeGpuConfig().TimeSlicing(v1beta1.LongTimeSlice).Obj(),
		},
		"GPU MPS with 0 percent is valid": {
			cfg: utiltesting.MakeGpuConfig().MPS(mps().ActiveThreadPercentage(0).Obj()).Obj(),
		},
		"GPU MPS with 100 percent and zero limits is valid": {
			cfg: utiltesting.MakeGpuConfig().MPS(mps().ActiveThreadPercentage(100).PinnedMemoryLimit("0").
				PerDevicePinnedMemoryLimit("3", "0").PerDevicePinnedMemoryLimit("GPU-abc", "2Gi").Obj()).Obj(),
		},
		"a VFIO device preferring iommufd is valid": {
			cfg: utiltesting.MakeVfioDeviceConfig().Iommu(v1beta1.IOMMUBackendPolicyPreferIommuFD, nil).Obj(),
		},
		"an unknown IOMMU backend policy names the supported policies": {
			cfg:     utiltesting.MakeVfioDeviceConfig().Iommu("IommuFDOnly", nil).Obj(),
			wantErr: `invalid VfioDeviceConfig: iommu.backendPolicy: Unsupported value: "IommuFDOnly": supported values: "LegacyOnly", "PreferIommuFD"`,
		},
		"an unknown strategy names the supported strategies": {
			cfg:     utiltesting.MakeGpuConfig().Strategy("Exclusive").Obj(),
			wantErr: `invalid GpuConfig: sharing.strategy: Unsupported value: "Exclusive": supported values: "TimeSlicing", "MPS"`,
		},
		"a missing strategy names the supported strategies": {
			cfg:     utiltesting.MakeGpuConfig().MpsConfig(mps().Obj()).Obj(),
			wantErr: `invalid GpuConfig: [sharing.strategy: Required value: supported values: "TimeSlicing", "MPS", sharing.mpsConfig: Forbidden: may only be set when strategy is "MPS"]`,
		},
		"an unknown interval names the supported intervals": {
			cfg:     utiltesting.MakeGpuConfig().TimeSlicing("VeryLong").Obj(),
			wantErr: `invalid GpuConfig: sharing.timeSlicingConfig.interval: Unsupported value: "VeryLong": supported values: "Default", "Short", "Medium", "Long"`,
		},
		"a time slicing config with the MPS strategy is forbidden": {
			cfg:     utiltesting.MakeGpuConfig().MPS(nil).TimeSlicingConfig(&v1beta1.TimeSlicingConfig{Interval: ptr.To(v1beta1.ShortTimeSlice)}).Obj(),
			wantErr: `invalid GpuConfig: sharing.timeSlicingConfig: Forbidden: may only be set when strategy is "TimeSlicing"`,
		},
		"an MPS config with the time slicing strategy is forbidden": {
			cfg:     utiltesting.MakeGpuConfig().TimeSlicing("").MpsConfig(mps().Obj()).Obj(),
			wantErr: `invalid GpuConfig: sharing.mpsConfig: Forbidden: may only be set when strategy is "MPS"`,
		},
		"an MPS percentage above 100 names the range": {
			cfg:     utiltesting.MakeGpuConfig().MPS(mps().ActiveThreadPercentage(101).Obj()).Obj(),
			wantErr: `invalid GpuConfig: sharing.mpsConfig.defaultActiveThreadPercentage: Invalid value: 101: must be between 0 and 100, inclusive`,
		},
		"a negative MPS percentage names the range": {
			cfg:     utiltesting.MakeGpuConfig().MPS(mps().ActiveThreadPercentage(-1).Obj()).Obj(),
			wantErr: `invalid GpuConfig: sharing.mpsConfig.defaultActiveThreadPercentage: Invalid value: -1: must be between 0 and 100, inclusive`,
		},
		"a negative pinned memory limit is rejected": {
			cfg:     utiltesting.MakeGpuConfig().MPS(mps().PinnedMemoryLimit("-1Gi").Obj()).Obj(),
			wantErr: `invalid GpuConfig: sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: Invalid value: "-1Gi": must be greater than or equal to 0`,
		},
		"a negative per-device pinned memory limit names the device key": {
			cfg:     utiltesting.MakeGpuConfig().MPS(mps().PerDevicePinnedMemoryLimit("GPU-abc", "-5M").Obj()).Obj(),
			wantErr: `invalid GpuConfig: sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit[GPU-abc]: Invalid value: "-5M": must be greater than or equal to 0`,
		},
		"a per-device key that is neither index nor UUID is rejected": {
			cfg: utiltesting.MakeGpuConfig().MPS(mps().PerDevicePinnedMemoryLimit("gpu0", "1Gi").Obj()).Obj(),
			wantErr: `invalid GpuConfig: sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit: Invalid value: "gpu0": ` +
				`keys must be a device index (e.g. "0") or a device UUID (e.g. "GPU-…", "MIG-…")`,
		},
		"a negative per-device index is rejected": {
			cfg: utiltesting.MakeGpuConfig().MPS(mps().PerDevicePinnedMemoryLimit("-1", "1Gi").Obj()).Obj(),
			wantErr: `invalid GpuConfig: sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit: Invalid value: "-1": ` +
				`keys must be a device index (e.g. "0") or a device UUID (e.g. "GPU-…", "MIG-…")`,
		},
		"every MPS error is reported at once": {
			cfg: utiltesting.MakeGpuConfig().MPS(mps().ActiveThreadPercentage(200).PinnedMemoryLimit("-1").Obj()).Obj(),
			wantErr: `invalid GpuConfig: [sharing.mpsConfig.defaultActiveThreadPercentage: Invalid value: 200: must be between 0 and 100, inclusive, ` +
				`sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: Invalid value: "-1": must be greater than or equal to 0]`,
		},
		"a MIG device with time slicing is valid": {
			cfg: utiltesting.MakeMigDeviceConfig().Strategy(v1beta1.TimeSlicingStrategy).Obj(),
		},
		"a MIG device with MPS is valid": {
			cfg: utiltesting.MakeMigDeviceConfig().MPS(mps().ActiveThreadPercentage(50).PerDevicePinnedMemoryLimit("MIG-x", "1Gi").Obj()).Obj(),
		},
		"a MIG device with an unknown strategy names the supported strategies": {
			cfg:     utiltesting.MakeMigDeviceConfig().Strategy("mps").Obj(),
			wantErr: `invalid MigDeviceConfig: sharing.strategy: Unsupported value: "mps": supported values: "TimeSlicing", "MPS"`,
		},
		"a MIG device with an out-of-range MPS percentage names the range": {
			cfg:     utiltesting.MakeMigDeviceConfig().MPS(mps().ActiveThreadPercentage(150).Obj()).Obj(),
			wantErr: `invalid MigDeviceConfig: sharing.mpsConfig.defaultActiveThreadPercentage: Invalid value: 150: must be between 0 and 100, inclusive`,
		},
		"a MIG device with an MPS config under time slicing is forbidden": {
			cfg:     utiltesting.MakeMigDeviceConfig().Strategy(v1beta1.TimeSlicingStrategy).MpsConfig(mps().Obj()).Obj(),
			wantErr: `invalid MigDeviceConfig: sharing.mpsConfig: Forbidden: may only be set when strategy is "MPS"`,
		},
		"a MIG device with a negative pinned memory limit is rejected": {
			cfg:     utiltesting.MakeMigDeviceConfig().MPS(mps().PinnedMemoryLimit("-1Mi").Obj()).Obj(),
			wantErr: `invalid MigDeviceConfig: sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: Invalid value: "-1Mi": must be greater than or equal to 0`,
		},
		"a channel config with Single is valid": {
			cfg: utiltesting.MakeComputeDomainChannelConfig("uid").AllocationMode(v1beta1.AllocationModeSingle).Obj(),
		},
		"a channel config without domainID is rejected": {
			cfg:     utiltesting.MakeComputeDomainChannelConfig("").Obj(),
			wantErr: `invalid ComputeDomainChannelConfig: domainID: Required value: the UID of the ComputeDomain`,
		},
		"a channel config with an invalid allocation mode names the allowed modes": {
			cfg:     utiltesting.MakeComputeDomainChannelConfig("uid").AllocationMode("single").Obj(),
			wantErr: `invalid ComputeDomainChannelConfig: allocationMode: Unsupported value: "single": supported values: "Single", "All"`,
		},
		"a daemon config is valid with a domainID": {
			cfg: utiltesting.MakeComputeDomainDaemonConfig("uid"),
		},
		"a daemon config without domainID is rejected": {
			cfg:     utiltesting.MakeComputeDomainDaemonConfig(""),
			wantErr: `invalid ComputeDomainDaemonConfig: domainID: Required value: the UID of the ComputeDomain`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantErr, errText(tc.cfg.Validate())); diff != "" {
				t.Errorf("Validate() error (-want +got):\n%s", diff)
			}
		})
	}
}
