package draplugin

import (
	"slices"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
)

// PreparedDevices is the prepare result the kubelet gets for a claim whose
// devices the checkpoint records: what a repeated prepare returns.
func PreparedDevices(cs checkpoint.ClaimState) []kubeletplugin.Device {
	out := make([]kubeletplugin.Device, 0, len(cs.Devices))
	for _, dev := range cs.Devices {
		out = append(out, kubeletplugin.Device{
			Requests:     slices.Clone(dev.Requests),
			PoolName:     dev.Pool,
			DeviceName:   dev.Device,
			CDIDeviceIDs: slices.Clone(dev.CDIDeviceIDs),
		})
	}
	return out
}
