package computedomain

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// configRequired refuses a device without an opaque config
// (draplugin.ResolveOpaqueConfig): channel and daemon devices have no
// default, their config names the domain.
func configRequired(result resourceapi.DeviceRequestAllocationResult, deviceType string) (apiv1beta1.DeviceConfig, error) {
	kind := apiv1beta1.ComputeDomainChannelConfigKind
	if deviceType == apiv1beta1.DeviceTypeDaemon {
		kind = apiv1beta1.ComputeDomainDaemonConfigKind
	}
	return nil, fmt.Errorf("request %q, device %s: a %s device needs an opaque %s naming its domain (the domain's claim template carries one)", result.Request, result.Device, deviceType, kind)
}
