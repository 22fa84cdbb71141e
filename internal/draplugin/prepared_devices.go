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

package draplugin

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
)

// PreparedDevices is the prepare result the kubelet gets for a claim whose
// devices the checkpoint records: what a repeated prepare returns.
func PreparedDevices(cs checkpoint.ClaimState) []kubeletplugin.Device {
	out := make([]kubeletplugin.Device, 0, len(cs.Devices))
	for _, dev := range cs.Devices {
		d := kubeletplugin.Device{
			Requests:     slices.Clone(dev.Requests),
			PoolName:     dev.Pool,
			DeviceName:   dev.Device,
			CDIDeviceIDs: slices.Clone(dev.CDIDeviceIDs),
		}
		if dev.ShareID != "" {
			// The kubelet reports the share to the PodResources API.
			d.ShareID = ptr.To(types.UID(dev.ShareID))
		}
		out = append(out, d)
	}
	return out
}
