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

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// ComputeDomainChannelConfigWrapper builds a ComputeDomainChannelConfig.
type ComputeDomainChannelConfigWrapper struct {
	v1beta1.ComputeDomainChannelConfig
}

// MakeComputeDomainChannelConfig starts a ComputeDomainChannelConfig for the domain with UID domainID.
func MakeComputeDomainChannelConfig(domainID string) *ComputeDomainChannelConfigWrapper {
	return &ComputeDomainChannelConfigWrapper{v1beta1.ComputeDomainChannelConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: v1beta1.ComputeDomainChannelConfigKind},
		DomainID: domainID,
	}}
}

// Obj returns the built ComputeDomainChannelConfig.
func (w *ComputeDomainChannelConfigWrapper) Obj() *v1beta1.ComputeDomainChannelConfig {
	return &w.ComputeDomainChannelConfig
}

// AllocationMode sets allocationMode.
func (w *ComputeDomainChannelConfigWrapper) AllocationMode(m v1beta1.ComputeDomainAllocationMode) *ComputeDomainChannelConfigWrapper {
	w.ComputeDomainChannelConfig.AllocationMode = m
	return w
}
