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
)

// Device types, the values of a device's `type` attribute.
const (
	DeviceTypeGpu     = "gpu"
	DeviceTypeMig     = "mig"
	DeviceTypeChannel = "channel"
	DeviceTypeDaemon  = "daemon"
	// DeviceTypeVfio is a GPU published for passthrough to a virtual machine (vfio-pci).
	DeviceTypeVfio = "vfio"
)

// configKindForDeviceType is the one opaque config kind that configures each device type.
var configKindForDeviceType = map[string]string{
	DeviceTypeGpu:     GpuConfigKind,
	DeviceTypeMig:     MigDeviceConfigKind,
	DeviceTypeChannel: ComputeDomainChannelConfigKind,
	DeviceTypeDaemon:  ComputeDomainDaemonConfigKind,
	DeviceTypeVfio:    VfioDeviceConfigKind,
}

// CheckConfigAppliesTo returns an error when cfg cannot configure a device of deviceType (a config for
// the wrong device type is an error, not ignored). The error names the kind that would apply.
func CheckConfigAppliesTo(cfg DeviceConfig, deviceType string) error {
	want, ok := configKindForDeviceType[deviceType]
	if !ok {
		return fmt.Errorf("device type %q: supported values: %q, %q, %q, %q, %q",
			deviceType, DeviceTypeGpu, DeviceTypeMig, DeviceTypeVfio, DeviceTypeChannel, DeviceTypeDaemon)
	}
	got := ConfigKind(cfg)
	if got != want {
		return fmt.Errorf("a %s cannot configure a %s device; use a %s", got, deviceType, want)
	}
	return nil
}

// DefaultConfig returns the configuration a device of deviceType gets when no class or claim config
// names it. Channel and daemon devices have none: their claims must carry the domain's config.
func DefaultConfig(deviceType string) (DeviceConfig, bool) {
	switch deviceType {
	case DeviceTypeGpu:
		return DefaultGpuConfig(), true
	case DeviceTypeMig:
		return DefaultMigDeviceConfig(), true
	case DeviceTypeVfio:
		return DefaultVfioDeviceConfig(), true
	default:
		return nil, false
	}
}

// ConfigKind is the kind of a decoded opaque config.
func ConfigKind(cfg DeviceConfig) string {
	switch cfg.(type) {
	case *GpuConfig:
		return GpuConfigKind
	case *MigDeviceConfig:
		return MigDeviceConfigKind
	case *ComputeDomainChannelConfig:
		return ComputeDomainChannelConfigKind
	case *ComputeDomainDaemonConfig:
		return ComputeDomainDaemonConfigKind
	case *VfioDeviceConfig:
		return VfioDeviceConfigKind
	default:
		return fmt.Sprintf("%T", cfg)
	}
}
