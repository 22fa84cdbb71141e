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
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// getOrCreate returns the object named like want, one of the objects the controller makes for the domain
// (its claim template, its PodGroups, its Workload), read into into, creating want when it does not exist;
// the caller judges whether what it got is the domain's. The cache holds only the objects the controller
// labeled, and lags behind its own creates. For a name not yet created or found taken in this process
// (expectations.isTaken), a cache miss is a new domain's, or the first pass after a restart, whose cache
// synced before it: want is created at once, one API call instead of a read and a create, and an
// AlreadyExists answer (a foreign object, which the cache does not hold) is read from the API server. For a
// name created or found taken, a miss is confirmed with a live read first, so that neither the controller's
// own create lagging in the cache nor a foreign object costs an HTTP 409 on every pass.
func (r *Reconciler) getOrCreate(ctx context.Context, cd *v1beta1.ComputeDomain, want, into client.Object) (client.Object, error) {
	key := client.ObjectKeyFromObject(want)
	err := r.client.Get(ctx, key, into)
	if err == nil {
		return into, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get %s %s: %w", r.kindOf(want), key, err)
	}
	var got client.Object
	if r.expectations.isTaken(cd.UID, want) {
		got, err = r.createUnlessLive(ctx, want, into)
	} else {
		got, err = r.createOrRead(ctx, want, into)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", r.kindOf(want), key, err)
	}
	r.expectations.take(cd, want)
	return got, nil
}

// createUnlessLive returns the object named like want as the API server has it, creating want when the
// server has none: the cache is not asked, for callers that know it is stale.
func (r *Reconciler) createUnlessLive(ctx context.Context, want, existing client.Object) (client.Object, error) {
	err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(want), existing)
	if err == nil {
		return existing, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get from the API server: %w", err)
	}
	return r.createOrRead(ctx, want, existing)
}

// createOrRead creates want, or returns the object of its name from the API server when one exists.
func (r *Reconciler) createOrRead(ctx context.Context, want, existing client.Object) (client.Object, error) {
	err := r.client.Create(ctx, want)
	if err == nil {
		klog.FromContext(ctx).V(2).Info("Created object", "kind", r.kindOf(want), "object", klog.KObj(want))
		return want, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create: %w", err)
	}
	if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(want), existing); err != nil {
		return nil, fmt.Errorf("get after create conflict: %w", err)
	}
	return existing, nil
}

// kindOf names an object's kind for messages, from the client's scheme (typed objects carry no kind).
func (r *Reconciler) kindOf(o client.Object) string {
	if gvk, err := apiutil.GVKForObject(o, r.client.Scheme()); err == nil {
		return gvk.Kind
	}
	return fmt.Sprintf("%T", o)
}
