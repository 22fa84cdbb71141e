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
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// ResourceClaimWrapper builds a ResourceClaim.
type ResourceClaimWrapper struct{ resourceapi.ResourceClaim }

// MakeResourceClaim starts an unallocated ResourceClaim named name in namespace ns, without requests.
func MakeResourceClaim(name, ns string) *ResourceClaimWrapper {
	return &ResourceClaimWrapper{resourceapi.ResourceClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: resourceapi.SchemeGroupVersion.String(), Kind: "ResourceClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
	}}
}

// Obj returns the built ResourceClaim.
func (w *ResourceClaimWrapper) Obj() *resourceapi.ResourceClaim { return &w.ResourceClaim }

// UID sets metadata.uid.
func (w *ResourceClaimWrapper) UID(uid types.UID) *ResourceClaimWrapper {
	w.ObjectMeta.UID = uid
	return w
}

// Request adds a spec request for exactly one device of deviceClass.
func (w *ResourceClaimWrapper) Request(name, deviceClass string) *ResourceClaimWrapper {
	w.Spec.Devices.Requests = append(w.Spec.Devices.Requests, resourceapi.DeviceRequest{
		Name: name, Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: deviceClass},
	})
	return w
}

// allocation is status.allocation, made empty where the claim is not allocated yet.
func (w *ResourceClaimWrapper) allocation() *resourceapi.AllocationResult {
	if w.Status.Allocation == nil {
		w.Status.Allocation = &resourceapi.AllocationResult{}
	}
	return w.Status.Allocation
}

// Allocated marks the claim allocated (an empty allocation result) without devices or node.
func (w *ResourceClaimWrapper) Allocated() *ResourceClaimWrapper {
	w.allocation()
	return w
}

// AllocatedOn marks the claim allocated to node: the node selector the scheduler writes for node-local
// devices (metadata.name In [node]).
func (w *ResourceClaimWrapper) AllocatedOn(node string) *ResourceClaimWrapper {
	w.allocation().NodeSelector = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
	}}}
	return w
}

// Device adds an allocated device for request: device of driver's pool.
func (w *ResourceClaimWrapper) Device(request, driver, pool, device string) *ResourceClaimWrapper {
	a := w.allocation()
	a.Devices.Results = append(a.Devices.Results, resourceapi.DeviceRequestAllocationResult{
		Request: request, Driver: driver, Pool: pool, Device: device,
	})
	return w
}

// AdminAccess marks the last added device as allocated with admin access.
func (w *ResourceClaimWrapper) AdminAccess() *ResourceClaimWrapper {
	results := w.allocation().Devices.Results
	if len(results) == 0 {
		panic("AdminAccess: add a Device first")
	}
	results[len(results)-1].AdminAccess = ptr.To(true)
	return w
}

// Share marks the last added device as one share of a device that allows multiple allocations (consumable
// capacity): the scheduler's share ID and the capacity the share consumes (name → quantity, e.g. "memory": "4Gi").
func (w *ResourceClaimWrapper) Share(shareID types.UID, consumed map[string]string) *ResourceClaimWrapper {
	results := w.allocation().Devices.Results
	if len(results) == 0 {
		panic("Share: add a Device first")
	}
	r := &results[len(results)-1]
	r.ShareID = ptr.To(shareID)
	if len(consumed) > 0 {
		r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{}
		for name, q := range consumed {
			r.ConsumedCapacity[resourceapi.QualifiedName(name)] = resource.MustParse(q)
		}
	}
	return w
}

// Config adds an opaque config for driver to the allocation, from source (claim or class), for requests (all
// requests when none). params is a JSON string or []byte, taken as it is (to test what a decoder makes of bad
// JSON), or any other value, a config object for one, marshaled to JSON.
func (w *ResourceClaimWrapper) Config(source resourceapi.AllocationConfigSource, driver string, params any, requests ...string) *ResourceClaimWrapper {
	var raw []byte
	switch p := params.(type) {
	case string:
		raw = []byte(p)
	case []byte:
		raw = p
	default:
		var err error
		if raw, err = json.Marshal(p); err != nil {
			panic(fmt.Sprintf("Config: marshal %T: %v", p, err))
		}
	}
	a := w.allocation()
	a.Devices.Config = append(a.Devices.Config, resourceapi.DeviceAllocationConfiguration{
		Source: source, Requests: requests,
		DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
			Driver: driver, Parameters: runtime.RawExtension{Raw: raw},
		}},
	})
	return w
}

// ReservedFor adds pod to status.reservedFor, as the scheduler does for the pod it allocated the claim for.
func (w *ResourceClaimWrapper) ReservedFor(pod *corev1.Pod) *ResourceClaimWrapper {
	w.Status.ReservedFor = append(w.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{
		Resource: "pods", Name: pod.Name, UID: pod.UID,
	})
	return w
}
