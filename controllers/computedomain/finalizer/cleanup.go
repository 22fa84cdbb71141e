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

// Package finalizer tears a ComputeDomain down: the domain's finalizer deletes the objects it caused in
// the operator namespace, where no owner reference from the domain can reach, and releases its IMEX
// channels before the domain goes.
//
// It deletes at once: daemon pods and their claims go through the kubelet plugin's normal unprepare path,
// which needs only the plugin's checkpoint. Workload pods still running keep their device node but lose
// their IMEX daemons, so imports over the domain's channel fail from then on. The one thing it waits for is
// the channel: the domain's channel numbers are released, and the finalizer removed, only once no workload
// claim of the domain is allocated any more, so a new domain in the clique never gets a channel that pods of
// the old one still hold (ChannelsHeldError): a claim counts while it is allocated and reserved for a pod.
package finalizer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// Name is the ComputeDomain finalizer, the same name NVIDIA's driver uses.
const Name = "resource.nvidia.com/computeDomain"

// ChannelReleaser frees a domain's IMEX channels.
type ChannelReleaser interface {
	Release(uid types.UID)
}

// Cleanup removes what a domain caused outside its own namespace.
type Cleanup struct {
	Client   client.Client
	Channels ChannelReleaser
}

// Ensure adds the finalizer to a live domain that lacks it; a domain that has it costs no write.
func Ensure(ctx context.Context, c client.Client, cd *v1beta1.ComputeDomain) error {
	if controllerutil.ContainsFinalizer(cd, Name) {
		return nil
	}
	base := cd.DeepCopy()
	controllerutil.AddFinalizer(cd, Name)
	if err := c.Patch(ctx, cd, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("add finalizer %s: %w", Name, err)
	}
	return nil
}

// Run waits until no workload claim of the domain is allocated (until then it returns a *ChannelsHeldError),
// then releases its channels and removes the finalizer. The domain's claim template is owned by it and goes
// with it. A Run that failed half way is simply run again.
func (c Cleanup) Run(ctx context.Context, cd *v1beta1.ComputeDomain) error {
	logger := klog.FromContext(ctx)
	if !controllerutil.ContainsFinalizer(cd, Name) {
		return nil
	}
	held, err := c.allocatedWorkloadClaims(ctx, cd)
	if err != nil {
		return err
	}
	if len(held) > 0 {
		return &ChannelsHeldError{Claims: held}
	}
	c.Channels.Release(cd.UID)

	if err := removeFinalizer(ctx, c.Client, cd); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizer %s: %w", Name, err)
	}
	logger.V(2).Info("Removed finalizer of deleted domain")
	return nil
}

// ChannelsHeldError says that workload claims of a deleted domain are still allocated: its channel stays
// assigned, and the finalizer in place, until they are gone. Not a failure: the claims' deletion requeues
// the domain.
type ChannelsHeldError struct {
	// Claims are the allocated workload claims, sorted.
	Claims []string
}

func (e *ChannelsHeldError) Error() string {
	return fmt.Sprintf("the domain's IMEX channel stays assigned while %d workload claims are allocated (%s)", len(e.Claims), strings.Join(e.Claims, ", "))
}

// allocatedWorkloadClaims lists the names of the domain's workload claims that are still allocated and reserved.
func (c Cleanup) allocatedWorkloadClaims(ctx context.Context, cd *v1beta1.ComputeDomain) ([]string, error) {
	var list resourcev1.ResourceClaimList
	if err := c.Client.List(ctx, &list, client.InNamespace(cd.Namespace),
		client.MatchingLabels{v1beta1.WorkloadClaimLabelKey: string(cd.UID)}); err != nil {
		return nil, fmt.Errorf("list workload ResourceClaims of %s: %w", klog.KObj(cd), err)
	}
	var held []string
	for _, claim := range list.Items {
		// Reserved for a consumer: a pod may run with the channel. The reservation goes after the pod is
		// done (its claims unprepared), as in WorkloadNodes.
		if claim.Status.Allocation != nil && len(claim.Status.ReservedFor) > 0 {
			held = append(held, claim.Name)
		}
	}
	slices.Sort(held)
	return held, nil
}

// removeFinalizer removes Name with a JSON patch that first tests the finalizer list it read, so it never
// drops a finalizer someone else added meanwhile, without depending on the resourceVersion: the informer
// cache often lags behind the controller's own last status write, and an optimistic lock on it would
// answer 409 for nothing.
func removeFinalizer(ctx context.Context, c client.Client, cd *v1beta1.ComputeDomain) error {
	current := append([]string{}, cd.Finalizers...)
	controllerutil.RemoveFinalizer(cd, Name)
	remaining := append([]string{}, cd.Finalizers...)
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/finalizers", "value": current},
		{"op": "replace", "path": "/metadata/finalizers", "value": remaining},
	})
	if err != nil {
		return err
	}
	return c.Patch(ctx, cd, client.RawPatch(types.JSONPatchType, patch))
}
