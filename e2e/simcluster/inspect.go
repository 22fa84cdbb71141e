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

package simcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// AllocatedDevice is one device allocated to a pod's claim, with the
// attributes its ResourceSlice publishes.
type AllocatedDevice struct {
	Claim      string
	ClaimUID   string
	Request    string
	Driver     string
	Pool       string
	Device     string
	Attributes map[resourceapi.QualifiedName]resourceapi.DeviceAttribute
}

// StringAttribute returns a string attribute by its unqualified name (the
// driver's domain) or qualified name.
func (d AllocatedDevice) StringAttribute(name string) string {
	for _, key := range []resourceapi.QualifiedName{resourceapi.QualifiedName(name), resourceapi.QualifiedName(d.Driver + "/" + name)} {
		if a, ok := d.Attributes[key]; ok && a.StringValue != nil {
			return *a.StringValue
		}
	}
	return ""
}

// PodDevices lists the devices allocated to the claims of a pod (from
// pod.status.resourceClaimStatuses, direct claim references, and the
// scheduler's claim for extended resources).
func PodDevices(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod) ([]AllocatedDevice, error) {
	var claimNames []string
	for _, pc := range pod.Spec.ResourceClaims {
		if pc.ResourceClaimName != nil {
			claimNames = append(claimNames, *pc.ResourceClaimName)
			continue
		}
		for _, s := range pod.Status.ResourceClaimStatuses {
			if s.Name == pc.Name && s.ResourceClaimName != nil {
				claimNames = append(claimNames, *s.ResourceClaimName)
			}
		}
	}
	if ext := pod.Status.ExtendedResourceClaimStatus; ext != nil {
		claimNames = append(claimNames, ext.ResourceClaimName)
	}
	var out []AllocatedDevice
	for _, name := range claimNames {
		claim, err := client.ResourceV1().ResourceClaims(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("claim %s: %w", name, err)
		}
		if claim.Status.Allocation == nil {
			return nil, fmt.Errorf("claim %s is not allocated", name)
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			attrs, err := deviceAttributes(ctx, client, r.Driver, r.Pool, r.Device)
			if err != nil {
				return nil, err
			}
			out = append(out, AllocatedDevice{
				Claim: name, ClaimUID: string(claim.UID), Request: r.Request,
				Driver: r.Driver, Pool: r.Pool, Device: r.Device, Attributes: attrs,
			})
		}
	}
	return out, nil
}

func deviceAttributes(ctx context.Context, client kubernetes.Interface, driver, pool, device string) (map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, error) {
	slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
		FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + driver,
	})
	if err != nil {
		return nil, fmt.Errorf("list ResourceSlices of %s: %w", driver, err)
	}
	for _, s := range slices.Items {
		if s.Spec.Pool.Name != pool {
			continue
		}
		for _, d := range s.Spec.Devices {
			if d.Name == device {
				return d.Attributes, nil
			}
		}
	}
	return nil, fmt.Errorf("device %s/%s/%s is in no ResourceSlice", driver, pool, device)
}
