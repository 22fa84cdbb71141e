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
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
)

func TestPreparedDevices(t *testing.T) {
	cases := map[string]struct {
		state checkpoint.ClaimState
		want  []kubeletplugin.Device
	}{
		"a claim without devices returns an empty result": {
			state: checkpoint.ClaimState{Status: checkpoint.PrepareCompleted},
			want:  []kubeletplugin.Device{},
		},
		"every recorded device is returned with its requests and CDI IDs, driver data left out": {
			state: checkpoint.ClaimState{Status: checkpoint.PrepareCompleted, Devices: []checkpoint.PreparedDevice{
				{Requests: []string{"gpus"}, Pool: "tray-1", Device: "gpu-0", CDIDeviceIDs: []string{"k8s.gpu.nvidia.com/claim=u-gpu-0"}},
				{Requests: []string{"mig"}, Pool: "tray-1", Device: "gpu-1-mig-1g", AdminAccess: true, Data: json.RawMessage(`{"gi":1}`)},
			}},
			want: []kubeletplugin.Device{
				{Requests: []string{"gpus"}, PoolName: "tray-1", DeviceName: "gpu-0", CDIDeviceIDs: []string{"k8s.gpu.nvidia.com/claim=u-gpu-0"}},
				{Requests: []string{"mig"}, PoolName: "tray-1", DeviceName: "gpu-1-mig-1g"},
			},
		},
		"two shares of one device are returned with their share IDs, which the kubelet reports to PodResources": {
			state: checkpoint.ClaimState{Status: checkpoint.PrepareCompleted, Devices: []checkpoint.PreparedDevice{
				{Requests: []string{"a"}, Pool: "tray-1", Device: "gpu-0", ShareID: "s-1", ConsumedCapacity: map[string]string{"memory": "4Gi"}},
				{Requests: []string{"b"}, Pool: "tray-1", Device: "gpu-0", ShareID: "s-2"},
			}},
			want: []kubeletplugin.Device{
				{Requests: []string{"a"}, PoolName: "tray-1", DeviceName: "gpu-0", ShareID: ptr.To(types.UID("s-1"))},
				{Requests: []string{"b"}, PoolName: "tray-1", DeviceName: "gpu-0", ShareID: ptr.To(types.UID("s-2"))},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, PreparedDevices(tc.state)); diff != "" {
				t.Errorf("devices (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPreparedDevicesDoNotShareTheCheckpointsSlices(t *testing.T) {
	cs := checkpoint.ClaimState{Devices: []checkpoint.PreparedDevice{{Requests: []string{"gpus"}, CDIDeviceIDs: []string{"a"}}}}
	out := PreparedDevices(cs)
	out[0].Requests[0], out[0].CDIDeviceIDs[0] = "changed", "changed"
	if cs.Devices[0].Requests[0] != "gpus" || cs.Devices[0].CDIDeviceIDs[0] != "a" {
		t.Errorf("changing the result changed the checkpoint: %+v", cs.Devices[0])
	}
}
