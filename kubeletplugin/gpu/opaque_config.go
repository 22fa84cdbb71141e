package gpu

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
)

// resolveConfig returns the effective opaque configuration of one allocated
// device (draplugin.ResolveOpaqueConfig); without any, the device type's
// default applies.
func resolveConfig(driverName string, configs []resourceapi.DeviceAllocationConfiguration, result resourceapi.DeviceRequestAllocationResult, deviceType string) (apiv1beta1.DeviceConfig, error) {
	return draplugin.ResolveOpaqueConfig(driverName, configs, result, deviceType, func() (apiv1beta1.DeviceConfig, error) {
		def, ok := apiv1beta1.DefaultConfig(deviceType)
		if !ok {
			return nil, fmt.Errorf("device %s of type %q needs an opaque config", result.Device, deviceType)
		}
		return def, nil
	})
}
