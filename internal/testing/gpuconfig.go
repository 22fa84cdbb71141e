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
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// GpuConfigWrapper builds a GpuConfig.
type GpuConfigWrapper struct{ v1beta1.GpuConfig }

// MakeGpuConfig starts a GpuConfig without sharing.
func MakeGpuConfig() *GpuConfigWrapper {
	return &GpuConfigWrapper{*v1beta1.DefaultGpuConfig()}
}

// Obj returns the built GpuConfig.
func (w *GpuConfigWrapper) Obj() *v1beta1.GpuConfig { return &w.GpuConfig }

// TimeSlicing sets the TimeSlicing strategy; an empty interval leaves timeSlicingConfig unset.
func (w *GpuConfigWrapper) TimeSlicing(interval v1beta1.TimeSliceInterval) *GpuConfigWrapper {
	w.Sharing = &v1beta1.GpuSharing{Strategy: v1beta1.TimeSlicingStrategy}
	if interval != "" {
		w.Sharing.TimeSlicingConfig = &v1beta1.TimeSlicingConfig{Interval: ptr.To(interval)}
	}
	return w
}

// Strategy sets the sharing strategy alone, keeping any strategy configs already set.
func (w *GpuConfigWrapper) Strategy(s v1beta1.SharingStrategy) *GpuConfigWrapper {
	if w.Sharing == nil {
		w.Sharing = &v1beta1.GpuSharing{}
	}
	w.Sharing.Strategy = s
	return w
}

// MPS sets the MPS strategy with mps (nil leaves mpsConfig unset).
func (w *GpuConfigWrapper) MPS(mps *v1beta1.MpsConfig) *GpuConfigWrapper {
	w.Sharing = &v1beta1.GpuSharing{Strategy: v1beta1.MpsStrategy, MpsConfig: mps}
	return w
}

// TimeSlicingConfig sets sharing.timeSlicingConfig whatever the strategy.
func (w *GpuConfigWrapper) TimeSlicingConfig(c *v1beta1.TimeSlicingConfig) *GpuConfigWrapper {
	if w.Sharing == nil {
		w.Sharing = &v1beta1.GpuSharing{}
	}
	w.Sharing.TimeSlicingConfig = c
	return w
}

// MpsConfig sets sharing.mpsConfig whatever the strategy.
func (w *GpuConfigWrapper) MpsConfig(c *v1beta1.MpsConfig) *GpuConfigWrapper {
	if w.Sharing == nil {
		w.Sharing = &v1beta1.GpuSharing{}
	}
	w.Sharing.MpsConfig = c
	return w
}

// MpsConfigWrapper builds an MpsConfig.
type MpsConfigWrapper struct{ v1beta1.MpsConfig }

// MakeMpsConfig starts an empty MpsConfig.
func MakeMpsConfig() *MpsConfigWrapper { return &MpsConfigWrapper{} }

// Obj returns the built MpsConfig.
func (w *MpsConfigWrapper) Obj() *v1beta1.MpsConfig { return &w.MpsConfig }

// ActiveThreadPercentage sets defaultActiveThreadPercentage.
func (w *MpsConfigWrapper) ActiveThreadPercentage(p int) *MpsConfigWrapper {
	w.DefaultActiveThreadPercentage = ptr.To(p)
	return w
}

// PinnedMemoryLimit sets defaultPinnedDeviceMemoryLimit from a quantity string such as "10Gi".
func (w *MpsConfigWrapper) PinnedMemoryLimit(q string) *MpsConfigWrapper {
	w.DefaultPinnedDeviceMemoryLimit = ptr.To(resource.MustParse(q))
	return w
}

// PerDevicePinnedMemoryLimit sets defaultPerDevicePinnedMemoryLimit[key] from a quantity string.
func (w *MpsConfigWrapper) PerDevicePinnedMemoryLimit(key, q string) *MpsConfigWrapper {
	if w.DefaultPerDevicePinnedMemoryLimit == nil {
		w.DefaultPerDevicePinnedMemoryLimit = v1beta1.MpsPerDevicePinnedMemoryLimit{}
	}
	w.DefaultPerDevicePinnedMemoryLimit[key] = resource.MustParse(q)
	return w
}

// MultiUser sets multiUser.
func (w *MpsConfigWrapper) MultiUser(on bool) *MpsConfigWrapper {
	w.MpsConfig.MultiUser = ptr.To(on)
	return w
}
