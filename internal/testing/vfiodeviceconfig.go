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

package testing

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// VfioDeviceConfigWrapper builds a VfioDeviceConfig.
type VfioDeviceConfigWrapper struct{ v1beta1.VfioDeviceConfig }

// MakeVfioDeviceConfig returns a VfioDeviceConfig without iommu settings.
func MakeVfioDeviceConfig() *VfioDeviceConfigWrapper {
	return &VfioDeviceConfigWrapper{v1beta1.VfioDeviceConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: v1beta1.VfioDeviceConfigKind},
	}}
}

// Obj returns the config.
func (w *VfioDeviceConfigWrapper) Obj() *v1beta1.VfioDeviceConfig { return &w.VfioDeviceConfig }

// Iommu sets iommu.backendPolicy and iommu.enableAPIDevice (nil: unset).
func (w *VfioDeviceConfigWrapper) Iommu(policy v1beta1.IOMMUBackendPolicy, apiDevice *bool) *VfioDeviceConfigWrapper {
	w.VfioDeviceConfig.Iommu = &v1beta1.IOMMUConfig{BackendPolicy: policy, EnableAPIDevice: apiDevice}
	return w
}

// APIDevice is a *bool for Iommu.
func APIDevice(b bool) *bool { return ptr.To(b) }
