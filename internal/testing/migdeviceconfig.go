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
	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// MigDeviceConfigWrapper builds a MigDeviceConfig.
type MigDeviceConfigWrapper struct{ v1beta1.MigDeviceConfig }

// MakeMigDeviceConfig starts a MigDeviceConfig without sharing.
func MakeMigDeviceConfig() *MigDeviceConfigWrapper {
	return &MigDeviceConfigWrapper{*v1beta1.DefaultMigDeviceConfig()}
}

// Obj returns the built MigDeviceConfig.
func (w *MigDeviceConfigWrapper) Obj() *v1beta1.MigDeviceConfig { return &w.MigDeviceConfig }

// Strategy sets the sharing strategy, keeping any mpsConfig already set.
func (w *MigDeviceConfigWrapper) Strategy(s v1beta1.SharingStrategy) *MigDeviceConfigWrapper {
	if w.Sharing == nil {
		w.Sharing = &v1beta1.MigDeviceSharing{}
	}
	w.Sharing.Strategy = s
	return w
}

// MPS sets the MPS strategy with mps (nil leaves mpsConfig unset).
func (w *MigDeviceConfigWrapper) MPS(mps *v1beta1.MpsConfig) *MigDeviceConfigWrapper {
	w.Sharing = &v1beta1.MigDeviceSharing{Strategy: v1beta1.MpsStrategy, MpsConfig: mps}
	return w
}

// MpsConfig sets sharing.mpsConfig whatever the strategy.
func (w *MigDeviceConfigWrapper) MpsConfig(c *v1beta1.MpsConfig) *MigDeviceConfigWrapper {
	if w.Sharing == nil {
		w.Sharing = &v1beta1.MigDeviceSharing{}
	}
	w.Sharing.MpsConfig = c
	return w
}
