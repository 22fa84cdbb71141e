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
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// sweepOrphans deletes what a domain that no longer exists left in the operator namespace: its DaemonSet,
// daemon claim template and member records. The finalizer does that for a domain deleted normally; this
// catches a domain that vanished without it (its finalizer removed by hand, a restore from backup, a
// controller that was not running). It runs when a reconcile finds the domain gone, which the events of
// those very objects (mapped to the domain through their annotations and the members' spec) cause, also
// for every such object when the controller starts. The workload claim template is owned by the domain and
// goes with it through the garbage collector; daemon claims are owned by their pods.
//
// No domain of that name exists (the caller just found none), and objects for a new domain of the name are
// only created by a reconcile that finds it, which cannot run concurrently with this one: what matches is an
// orphan.
func (r *Reconciler) sweepOrphans(ctx context.Context, domain client.ObjectKey) error {
	logger := klog.FromContext(ctx)
	ofDomain := func(o client.Object) bool {
		a := o.GetAnnotations()
		return a[DomainNamespaceAnnotation] == domain.Namespace && a[DomainNameAnnotation] == domain.Name
	}
	var orphans []client.Object
	var daemonSets appsv1.DaemonSetList
	if err := r.client.List(ctx, &daemonSets, client.InNamespace(r.cfg.OperatorNamespace), client.MatchingLabels{ManagedByLabelKey: ManagedByLabelValue}); err != nil {
		return fmt.Errorf("list DaemonSets: %w", err)
	}
	for i := range daemonSets.Items {
		if ofDomain(&daemonSets.Items[i]) {
			orphans = append(orphans, &daemonSets.Items[i])
		}
	}
	var templates resourcev1.ResourceClaimTemplateList
	if err := r.client.List(ctx, &templates, client.InNamespace(r.cfg.OperatorNamespace), client.MatchingLabels{ManagedByLabelKey: ManagedByLabelValue}); err != nil {
		return fmt.Errorf("list ResourceClaimTemplates: %w", err)
	}
	for i := range templates.Items {
		if ofDomain(&templates.Items[i]) {
			orphans = append(orphans, &templates.Items[i])
		}
	}
	var members v1beta1.ComputeDomainMemberList
	if err := r.client.List(ctx, &members, client.InNamespace(r.cfg.OperatorNamespace)); err != nil {
		return fmt.Errorf("list ComputeDomainMembers: %w", err)
	}
	for i := range members.Items {
		if m := &members.Items[i]; m.Spec.DomainNamespace == domain.Namespace && m.Spec.DomainName == domain.Name {
			orphans = append(orphans, m)
		}
	}
	var errs []error
	for _, o := range orphans {
		err := r.client.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: ptr.To(o.GetUID())})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete %T %s of vanished domain %s: %w", o, klog.KObj(o), domain, err))
			continue
		}
		if err == nil {
			logger.Info("Deleted an object of a ComputeDomain that is gone", "kind", fmt.Sprintf("%T", o), "object", klog.KObj(o), "domain", domain)
		}
	}
	return errors.Join(errs...)
}
