package gpu

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// defaultConfig is the config of a device without an opaque one
// (draplugin.ResolveOpaqueConfig): its device type's default.
func defaultConfig(result resourceapi.DeviceRequestAllocationResult, deviceType string) (apiv1beta1.DeviceConfig, error) {
	def, ok := apiv1beta1.DefaultConfig(deviceType)
	if !ok {
		return nil, fmt.Errorf("device %s of type %q needs an opaque config", result.Device, deviceType)
	}
	return def, nil
}
