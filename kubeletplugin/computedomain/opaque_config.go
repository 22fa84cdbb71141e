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
