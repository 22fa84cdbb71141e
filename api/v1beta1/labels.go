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

// Labels and annotations the controller puts on the objects it makes, shared by the controller, the IMEX
// daemon, the kubelet plugins and the webhook. None of them is part of the compatible API: they are ours.
const (
	// ManagedByLabelKey / ManagedByLabelValue mark the objects the controller created (claim templates,
	// PodGroups, IMEXCliques); its caches hold only claim templates and PodGroups that carry them.
	ManagedByLabelKey   = "app.kubernetes.io/managed-by"
	ManagedByLabelValue = "compute-domain-controller"
	// ComputeDomainLabelKey labels every object a domain causes (its workload claim template) with the
	// domain's UID.
	ComputeDomainLabelKey = "resource.nvidia.com/computeDomain"
	// WorkloadClaimLabelKey labels the workload ResourceClaims of a domain with its UID. The controller
	// puts it in the workload claim template's spec.metadata, so every claim generated from the template
	// carries it; the controller watches those claims to learn on which nodes the domain's workload is
	// allocated.
	WorkloadClaimLabelKey = "computedomain.resource.nvidia.com/workload-of"
	// DomainNamespaceAnnotation and DomainNameAnnotation name the domain of an object the controller made
	// (a label value cannot hold every name), so its events map back to the domain. Claims generated from
	// the workload claim template copy them.
	DomainNamespaceAnnotation = "resource.nvidia.com/computeDomainNamespace"
	DomainNameAnnotation      = "resource.nvidia.com/computeDomainName"
)
