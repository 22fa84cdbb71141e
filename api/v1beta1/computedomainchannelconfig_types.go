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

package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ComputeDomainChannelConfigKind is the kind of ComputeDomainChannelConfig.
const ComputeDomainChannelConfigKind = "ComputeDomainChannelConfig"

// ComputeDomainChannelConfig is the opaque configuration of an IMEX channel claim (driver
// compute-domain.nvidia.com). The controller writes it into the workload ResourceClaimTemplate of a
// ComputeDomain.
//
// +kubebuilder:object:root=true
type ComputeDomainChannelConfig struct {
	metav1.TypeMeta `json:",inline"`

	// domainID is the UID of the ComputeDomain the channel belongs to.
	// +required
	DomainID string `json:"domainID"`

	// allocationMode is Single (the domain's channel, the default) or All (every channel of the domain's IMEX
	// ensemble on the node: today its one channel, never a channel of another domain).
	// +optional
	AllocationMode ComputeDomainAllocationMode `json:"allocationMode,omitempty"`
}
