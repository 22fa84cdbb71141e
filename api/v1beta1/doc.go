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

// Package v1beta1 holds the resource.nvidia.com/v1beta1 API: the ComputeDomain custom resource and the
// opaque device configuration kinds (GpuConfig, MigDeviceConfig, ComputeDomainChannelConfig,
// ComputeDomainDaemonConfig) that ResourceClaims and DeviceClasses carry in config[].opaque.parameters.
//
// The names and JSON shapes are wire-compatible with NVIDIA's DRA driver for GPUs so that existing
// manifests run unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=resource.nvidia.com
package v1beta1
