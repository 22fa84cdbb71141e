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

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

func TestCheckConfigAppliesTo(t *testing.T) {
	cases := map[string]struct {
		cfg        v1beta1.DeviceConfig
		deviceType string
		wantErr    string
	}{
		"a GpuConfig configures a gpu": {
			cfg: utiltesting.MakeGpuConfig().Obj(), deviceType: v1beta1.DeviceTypeGpu,
		},
		"a MigDeviceConfig configures a mig device": {
			cfg: utiltesting.MakeMigDeviceConfig().Obj(), deviceType: v1beta1.DeviceTypeMig,
		},
		"a ComputeDomainChannelConfig configures a channel": {
			cfg: utiltesting.MakeComputeDomainChannelConfig("uid").Obj(), deviceType: v1beta1.DeviceTypeChannel,
		},
		"a ComputeDomainDaemonConfig configures a daemon": {
			cfg: utiltesting.MakeComputeDomainDaemonConfig("uid"), deviceType: v1beta1.DeviceTypeDaemon,
		},
		"a VfioDeviceConfig configures a vfio device": {
			cfg: utiltesting.MakeVfioDeviceConfig().Obj(), deviceType: v1beta1.DeviceTypeVfio,
		},
		"a GpuConfig for a vfio device names the kind to use": {
			cfg: utiltesting.MakeGpuConfig().Obj(), deviceType: v1beta1.DeviceTypeVfio,
			wantErr: "a GpuConfig cannot configure a vfio device; use a VfioDeviceConfig",
		},
		"a GpuConfig for a mig device names the kind to use": {
			cfg: utiltesting.MakeGpuConfig().Obj(), deviceType: v1beta1.DeviceTypeMig,
			wantErr: "a GpuConfig cannot configure a mig device; use a MigDeviceConfig",
		},
		"a daemon config for a channel names the kind to use": {
			cfg: utiltesting.MakeComputeDomainDaemonConfig("uid"), deviceType: v1beta1.DeviceTypeChannel,
			wantErr: "a ComputeDomainDaemonConfig cannot configure a channel device; use a ComputeDomainChannelConfig",
		},
		"an unknown device type names the supported types": {
			cfg: utiltesting.MakeGpuConfig().Obj(), deviceType: "vgpu",
			wantErr: `device type "vgpu": supported values: "gpu", "mig", "vfio", "channel", "daemon"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := v1beta1.CheckConfigAppliesTo(tc.cfg, tc.deviceType)
			if diff := cmp.Diff(tc.wantErr, errText(err)); diff != "" {
				t.Errorf("CheckConfigAppliesTo() error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultConfig(t *testing.T) {
	cases := map[string]struct {
		deviceType string
		want       v1beta1.DeviceConfig
		wantOK     bool
	}{
		"a gpu defaults to a GpuConfig without sharing": {
			deviceType: v1beta1.DeviceTypeGpu, want: utiltesting.MakeGpuConfig().Obj(), wantOK: true,
		},
		"a mig device defaults to a MigDeviceConfig without sharing": {
			deviceType: v1beta1.DeviceTypeMig, want: utiltesting.MakeMigDeviceConfig().Obj(), wantOK: true,
		},
		"a channel has no default: its claim must name the domain": {deviceType: v1beta1.DeviceTypeChannel},
		"a daemon has no default: its claim must name the domain":  {deviceType: v1beta1.DeviceTypeDaemon},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := v1beta1.DefaultConfig(tc.deviceType)
			if ok != tc.wantOK {
				t.Errorf("DefaultConfig() ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DefaultConfig() (-want +got):\n%s", diff)
			}
			if ok {
				if err := v1beta1.CheckConfigAppliesTo(got, tc.deviceType); err != nil {
					t.Errorf("the default config does not apply to its own device type: %v", err)
				}
				if err := got.Validate(); err != nil {
					t.Errorf("the default config is invalid: %v", err)
				}
			}
		})
	}
}
