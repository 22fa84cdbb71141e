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

package computedomain

import (
	"context"
	"encoding/json"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/status"
)

// ChannelRequestName is the request name inside the workload claim template.
const ChannelRequestName = "channel"

// WorkloadClaimTemplate builds the ResourceClaimTemplate named by spec.channel.resourceClaimTemplate.name
// in the domain's namespace: one device of the channel class, with the opaque
// ComputeDomainChannelConfig{domainID, allocationMode} for the compute-domain driver, and the domain's
// WorkloadClaimLabelKey label on the claims made from it. The domain owns it, so the garbage collector
// removes it with the domain.
func WorkloadClaimTemplate(cd *v1beta1.ComputeDomain, cfg Config) (*resourcev1.ResourceClaimTemplate, error) {
	mode := cd.Spec.Channel.AllocationMode
	if mode == "" {
		mode = v1beta1.AllocationModeSingle
	}
	params, err := opaqueParameters(&v1beta1.ComputeDomainChannelConfig{
		TypeMeta:       metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: v1beta1.ComputeDomainChannelConfigKind},
		DomainID:       string(cd.UID),
		AllocationMode: mode,
	})
	if err != nil {
		return nil, err
	}
	t := claimTemplate(cd.Namespace, cd.Spec.Channel.ResourceClaimTemplate.Name, cd, ChannelRequestName, cfg.ChannelDeviceClass, cfg.DriverName, params)
	// The ResourceClaim controller copies these to every claim it generates from the template: the label
	// lets the controller watch the domain's workload claims (to place its daemons), the annotations map
	// their events back to the domain.
	t.Spec.ObjectMeta = metav1.ObjectMeta{
		Labels:      map[string]string{v1beta1.WorkloadClaimLabelKey: string(cd.UID)},
		Annotations: domainAnnotations(cd),
	}
	t.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(cd, v1beta1.GroupVersion.WithKind("ComputeDomain"))}
	return t, nil
}

func claimTemplate(ns, name string, cd *v1beta1.ComputeDomain, request, class, driver string, params runtime.RawExtension) *resourcev1.ResourceClaimTemplate {
	return &resourcev1.ResourceClaimTemplate{
		TypeMeta: metav1.TypeMeta{APIVersion: resourcev1.SchemeGroupVersion.String(), Kind: "ResourceClaimTemplate"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   ns,
			Labels:      domainLabels(cd),
			Annotations: domainAnnotations(cd),
		},
		Spec: resourcev1.ResourceClaimTemplateSpec{
			Spec: resourcev1.ResourceClaimSpec{
				Devices: resourcev1.DeviceClaim{
					Requests: []resourcev1.DeviceRequest{{
						Name: request,
						Exactly: &resourcev1.ExactDeviceRequest{
							DeviceClassName: class,
							AllocationMode:  resourcev1.DeviceAllocationModeExactCount,
							Count:           1,
						},
					}},
					Config: []resourcev1.DeviceClaimConfiguration{{
						Requests: []string{request},
						DeviceConfiguration: resourcev1.DeviceConfiguration{
							Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: driver, Parameters: params},
						},
					}},
				},
			},
		},
	}
}

func opaqueParameters(obj any) (runtime.RawExtension, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return runtime.RawExtension{}, fmt.Errorf("encode opaque config: %w", err)
	}
	return runtime.RawExtension{Raw: raw}, nil
}

// domainLabels are the labels of every object the controller creates for a domain.
func domainLabels(cd *v1beta1.ComputeDomain) map[string]string {
	return map[string]string{
		v1beta1.ManagedByLabelKey:     v1beta1.ManagedByLabelValue,
		v1beta1.ComputeDomainLabelKey: string(cd.UID),
	}
}

func domainAnnotations(cd *v1beta1.ComputeDomain) map[string]string {
	return map[string]string{v1beta1.DomainNamespaceAnnotation: cd.Namespace, v1beta1.DomainNameAnnotation: cd.Name}
}

// ensureWorkloadClaimTemplate creates the workload claim template when it is missing. A template of that
// name that the domain does not control is left alone and reported as a blocker: the controller never
// overwrites a user's object.
func (r *Reconciler) ensureWorkloadClaimTemplate(ctx context.Context, cd *v1beta1.ComputeDomain) (*status.Blocker, error) {
	want, err := WorkloadClaimTemplate(cd, r.cfg)
	if err != nil {
		return nil, err
	}
	existing, err := r.getOrCreate(ctx, cd, want, &resourcev1.ResourceClaimTemplate{})
	if err != nil {
		return nil, fmt.Errorf("workload %w", err)
	}
	if !metav1.IsControlledBy(existing, cd) {
		return &status.Blocker{
			Reason: v1beta1.ComputeDomainReasonClaimTemplateConflict,
			Message: fmt.Sprintf("ResourceClaimTemplate %s/%s (spec.channel.resourceClaimTemplate.name) exists and is not controlled by this ComputeDomain; delete it or choose another name",
				want.Namespace, want.Name),
		}, nil
	}
	return nil, nil
}
