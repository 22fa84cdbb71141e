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

package webhook

import (
	"context"
	"net/http"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Paths the webhook serves; the chart's ValidatingWebhookConfiguration names them.
const (
	ResourceClaimPath         = "/validate-resource-claim"
	ResourceClaimTemplatePath = "/validate-resource-claim-template"
)

// Handlers returns the webhook's handlers by path. The API server sends resource.k8s.io/v1 objects whatever
// version a client used (the configuration's matchPolicy is Equivalent), so only v1 is decoded.
func Handlers(scheme *runtime.Scheme, drivers Drivers) map[string]http.Handler {
	return map[string]http.Handler{
		ResourceClaimPath:         admission.WithValidator[*resourcev1.ResourceClaim](scheme, claimValidator{drivers}),
		ResourceClaimTemplatePath: admission.WithValidator[*resourcev1.ResourceClaimTemplate](scheme, templateValidator{drivers}),
	}
}

// claimValidator checks a ResourceClaim's spec; the spec is immutable, so only creation is checked.
type claimValidator struct{ drivers Drivers }

func (v claimValidator) ValidateCreate(_ context.Context, c *resourcev1.ResourceClaim) (admission.Warnings, error) {
	return nil, invalid(resourcev1.SchemeGroupVersion.WithKind("ResourceClaim").GroupKind(), c.Name, ValidateClaimSpec(&c.Spec, v.drivers, field.NewPath("spec")))
}

func (claimValidator) ValidateUpdate(context.Context, *resourcev1.ResourceClaim, *resourcev1.ResourceClaim) (admission.Warnings, error) {
	return nil, nil
}

func (claimValidator) ValidateDelete(context.Context, *resourcev1.ResourceClaim) (admission.Warnings, error) {
	return nil, nil
}

// templateValidator checks a ResourceClaimTemplate's claim spec on creation and update.
type templateValidator struct{ drivers Drivers }

func (v templateValidator) ValidateCreate(_ context.Context, t *resourcev1.ResourceClaimTemplate) (admission.Warnings, error) {
	return nil, v.validate(t)
}

func (v templateValidator) ValidateUpdate(_ context.Context, _, t *resourcev1.ResourceClaimTemplate) (admission.Warnings, error) {
	return nil, v.validate(t)
}

func (templateValidator) ValidateDelete(context.Context, *resourcev1.ResourceClaimTemplate) (admission.Warnings, error) {
	return nil, nil
}

func (v templateValidator) validate(t *resourcev1.ResourceClaimTemplate) error {
	return invalid(resourcev1.SchemeGroupVersion.WithKind("ResourceClaimTemplate").GroupKind(), t.Name, ValidateClaimSpec(&t.Spec.Spec, v.drivers, field.NewPath("spec", "spec")))
}

// invalid is the Invalid status error of errs, or nil.
func invalid(gk schema.GroupKind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(gk, name, errs)
}
