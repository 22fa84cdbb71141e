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
