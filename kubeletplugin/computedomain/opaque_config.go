package computedomain

import (
	"fmt"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceclaim"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// resolveConfig returns the effective opaque config of one allocated device:
// class configs before claim configs, later wins; every applicable config
// must decode strictly and be the kind for the device type. Channel and daemon
// devices have no default: without a config the claim is refused.
func resolveConfig(driverName string, configs []resourceapi.DeviceAllocationConfiguration, result resourceapi.DeviceRequestAllocationResult, deviceType string) (apiv1beta1.DeviceConfig, error) {
	applicable := resourceclaim.ConfigForResult(configs, result)
	applicable = slices.DeleteFunc(applicable, func(c resourceapi.DeviceAllocationConfiguration) bool {
		return c.Opaque == nil || c.Opaque.Driver != driverName
	})
	slices.SortStableFunc(applicable, func(a, b resourceapi.DeviceAllocationConfiguration) int {
		return sourceRank(a.Source) - sourceRank(b.Source)
	})
	var effective apiv1beta1.DeviceConfig
	for _, c := range applicable {
		cfg, err := apiv1beta1.DecodeConfig(c.Opaque.Parameters.Raw)
		if err != nil {
			return nil, fmt.Errorf("config for request %q: %w", result.Request, err)
		}
		if err := apiv1beta1.CheckConfigAppliesTo(cfg, deviceType); err != nil {
			return nil, fmt.Errorf("config for request %q, device %s: %w", result.Request, result.Device, err)
		}
		effective = cfg
	}
	if effective == nil {
		kind := apiv1beta1.ComputeDomainChannelConfigKind
		if deviceType == apiv1beta1.DeviceTypeDaemon {
			kind = apiv1beta1.ComputeDomainDaemonConfigKind
		}
		return nil, fmt.Errorf("request %q, device %s: a %s device needs an opaque %s naming its domain (the domain's claim template carries one)", result.Request, result.Device, deviceType, kind)
	}
	effective.Normalize()
	if err := effective.Validate(); err != nil {
		return nil, fmt.Errorf("request %q, device %s: %w", result.Request, result.Device, err)
	}
	return effective, nil
}

func sourceRank(s resourceapi.AllocationConfigSource) int {
	if s == resourceapi.AllocationConfigSourceClass {
		return 0
	}
	return 1
}
