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
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/cliqueplacement"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/status"
	"github.com/computedomain-operator/computedomain-operator/internal/sliceplan"
	"github.com/computedomain-operator/computedomain-operator/internal/workloadapi"
)

// PlacementTopologyKey is the node label every pod of a domain's gang shares one value of: the NVLink clique.
const PlacementTopologyKey = cliqueplacement.TopologyKey

// refusedRetry is how often a domain refused a PodGroup because no clique is large enough is looked at
// again: cliques grow when nodes join, and the controller does not watch Nodes for it.
const refusedRetry = 30 * time.Second

// DomainGang is the PodGroup a domain's workload joins: a gang of spec.numNodes pods (one pod per node, as
// a ComputeDomain's workload runs), all in one NVLink clique, controlled by the domain so the garbage
// collector removes it with the domain.
func DomainGang(cd *v1beta1.ComputeDomain) workloadapi.Gang {
	return workloadapi.Gang{
		Namespace:   cd.Namespace,
		Name:        v1beta1.ComputeDomainPodGroupName(cd),
		MinCount:    cd.Spec.NumNodes,
		TopologyKey: PlacementTopologyKey,
		Labels:      domainLabels(cd),
		Annotations: domainAnnotations(cd),
		Owner:       metav1.NewControllerRef(cd, v1beta1.GroupVersion.WithKind("ComputeDomain")),
	}
}

// reconcilePlacement maintains what places the domain's workload and finds its PlacementGuaranteed condition.
// A domain with spec.numNodes is planned as slices (sliceplan, from spec.sliceSize and the largest clique an
// ensemble takes); a plan whose slices no clique can hold is refused at once (ExceedsClique). Then, in order:
// the clique placement fallback's verdict when it holds or released the domain's pods; a PodGroup gang in one
// clique for a one-slice domain on a cluster with the Workload API; a CompositePodGroup gang of slice PodGroups
// for a larger one on a cluster that serves composite groups; otherwise a condition saying how the pods are
// placed. Objects of the domain's names that the domain does not control are left alone.
func (r *Reconciler) reconcilePlacement(ctx context.Context, s *scope) error {
	cd := s.domain
	notGuaranteed := func(reason, message string) {
		s.placement = &status.Placement{Status: metav1.ConditionFalse, Reason: reason, Message: message}
	}
	if cd.Spec.NumNodes == 0 {
		if !r.cluster.WorkloadAPI {
			notGuaranteed(v1beta1.ComputeDomainReasonWorkloadAPIUnavailable, workloadAPIUnavailable)
			return nil
		}
		notGuaranteed(v1beta1.ComputeDomainReasonNumNodesUnset,
			"spec.numNodes is 0, so the gang's size is unknown and no PodGroup is made; set spec.numNodes to the number of the workload's pods (one per node), or create a PodGroup yourself")
		return nil
	}
	plan, err := r.slicePlan(cd)
	if err != nil {
		s.placement = &status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonExceedsClique, Message: err.Error()}
		return nil
	}
	s.plan = &plan
	if err := r.observeSlices(ctx, s); err != nil {
		return err
	}
	if refused, err := r.refuseBeyondCliques(ctx, s); refused || err != nil {
		return err
	}
	if r.cluster.Placements != nil {
		if p, ok := r.cluster.Placements.Placement(cd); ok {
			s.placement = &p
			return nil
		}
	}
	sliced := len(plan.Slices) > 1
	switch {
	case !r.cluster.WorkloadAPI && r.cluster.Placements != nil:
		notGuaranteed(v1beta1.ComputeDomainReasonWorkloadAPIUnavailable, fmt.Sprintf(
			"the cluster does not serve the Workload API (%s PodGroups); no pod of the domain is held for clique placement yet (the chart's webhook.podGroups holds them, then releases them together %s; pods created without it are placed one by one wherever their own affinity allows)",
			workloadapi.GroupVersion, cliqueplacement.IntoWhat(plan)))
		return nil
	case !r.cluster.WorkloadAPI:
		notGuaranteed(v1beta1.ComputeDomainReasonWorkloadAPIUnavailable, workloadAPIUnavailable)
		return nil
	case sliced && r.cluster.CompositePodGroups:
		return r.reconcileSlicedGang(ctx, s)
	case sliced && r.cluster.Placements != nil:
		notGuaranteed(v1beta1.ComputeDomainReasonWaitingForPods, fmt.Sprintf(
			"the cluster serves no %s CompositePodGroups (the CompositePodGroup gate); no pod of the domain is held yet: the webhook holds them, and the controller releases them together %s once all %d exist",
			workloadapi.CompositeGroupVersion, cliqueplacement.IntoWhat(plan), cd.Spec.NumNodes))
		return nil
	case sliced:
		notGuaranteed(v1beta1.ComputeDomainReasonWorkloadAPIUnavailable, fmt.Sprintf(
			"spec.numNodes %d is placed as %d slices (%s), but the cluster serves no %s CompositePodGroups (the CompositePodGroup gate) and the clique placement fallback is off: no gang is made",
			cd.Spec.NumNodes, len(plan.Slices), plan.Summary(), workloadapi.CompositeGroupVersion))
		return nil
	}
	return r.reconcileCliqueGang(ctx, s)
}

// workloadAPIUnavailable is the PlacementGuaranteed message of a cluster that serves no PodGroups.
var workloadAPIUnavailable = "the cluster does not serve " + workloadapi.GroupVersion.String() + " PodGroups (kube-apiserver --runtime-config=" +
	workloadapi.GroupVersion.String() + "=true and the GenericWorkload gate, seen when the controller started): " +
	"no gang is made, and the workload's pods are placed one by one wherever their own affinity allows"

// reconcileCliqueGang keeps a one-slice domain's PodGroup: a gang of spec.numNodes pods in one clique.
func (r *Reconciler) reconcileCliqueGang(ctx context.Context, s *scope) error {
	cd := s.domain
	notGuaranteed := func(reason, message string) {
		s.placement = &status.Placement{Status: metav1.ConditionFalse, Reason: reason, Message: message}
	}
	key := client.ObjectKey{Namespace: cd.Namespace, Name: v1beta1.ComputeDomainPodGroupName(cd)}
	existing, err := r.getOrCreate(ctx, cd, DomainGang(cd).PodGroup(), workloadapi.NewPodGroup())
	if err != nil {
		return err
	}
	observed, problem, err := r.checkGang(ctx, s, existing, cd.Spec.NumNodes)
	if err != nil || problem != nil {
		s.placement = problem
		return err
	}
	if observed.TopologyKey == "" {
		notGuaranteed(v1beta1.ComputeDomainReasonTopologyUnsupported, fmt.Sprintf(
			"the API server dropped PodGroup %s's topology constraint on %s (the TopologyAwareWorkloadScheduling gate is off): the gang of %d pods is all-or-nothing but may span NVLink cliques",
			key, PlacementTopologyKey, cd.Spec.NumNodes))
		return nil
	}
	s.placement = &status.Placement{
		Status: metav1.ConditionTrue,
		Reason: v1beta1.ComputeDomainReasonCliqueGang,
		Message: fmt.Sprintf("pods that join PodGroup %s (spec.schedulingGroup.podGroupName: %s) are placed as a gang of %d, all in one NVLink clique (%s)",
			key, key.Name, cd.Spec.NumNodes, PlacementTopologyKey),
	}
	if c := observed.Scheduled; c != nil && c.Status == metav1.ConditionFalse {
		s.placement.Unschedulable = fmt.Sprintf("the scheduler finds no NVLink clique for the gang of %d pods of PodGroup %s (%s: %s)",
			cd.Spec.NumNodes, key, c.Reason, c.Message)
	}
	return r.checkEscapes(ctx, s, observed.Scheduled, "PodGroup "+key.String())
}

// checkEscapes looks, while the domain's gang has not been scheduled and pods of the domain wait (some of its
// workload claims are not allocated), for pods of the domain that were admitted without joining the gang (the
// API server could not call the pod-group webhook, whose failure policy is Ignore): the gang waits for them for
// good, and they are placed one by one. When there are some, PlacementGuaranteed says PodsNotHeld and names
// them. A live list of the namespace's pods, at most every EscapeCheckInterval per domain; the domain is looked
// at again then. A domain created ahead of its workload, or whose pods are all placed, costs no look.
func (r *Reconciler) checkEscapes(ctx context.Context, s *scope, scheduled *metav1.Condition, gang string) error {
	cd := s.domain
	if s.unallocatedClaims == 0 || scheduled != nil && scheduled.Status == metav1.ConditionTrue {
		r.escapes.Forget(client.ObjectKeyFromObject(cd))
		return nil
	}
	escaped, err := r.escapes.Of(ctx, cd)
	if err != nil {
		return err
	}
	s.requeueAfter(cliqueplacement.EscapeCheckInterval)
	if len(escaped) == 0 {
		return nil
	}
	msg := fmt.Sprintf("the gang of %s waits for the domain's %d pods, but pods that use its claim template %s were admitted without joining it (the API server could not call the pod-group webhook, whose failure policy is Ignore): %s. "+
		"Those never join the gang, which waits for them, and are scheduled one by one wherever their own affinity allows; delete them (their controller recreates them through the webhook) to have all %d placed together, %s",
		gang, cd.Spec.NumNodes, cd.Spec.Channel.ResourceClaimTemplate.Name, cliqueplacement.NamePods(escaped), cd.Spec.NumNodes, cliqueplacement.IntoWhat(*s.plan))
	s.placement = &status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonPodsNotHeld, Message: msg, Unschedulable: msg}
	return nil
}

// checkGang checks one of the domain's PodGroups (existing, a gang of n pods in one clique by the controller's
// making): controlled by the domain, still a gang, its size restored when changed, its topology constraint the
// clique's or dropped by the API server (an empty TopologyKey, for the caller to judge). A problem it finds is
// the condition to show.
func (r *Reconciler) checkGang(ctx context.Context, s *scope, existing client.Object, n int32) (workloadapi.Observed, *status.Placement, error) {
	key := client.ObjectKeyFromObject(existing)
	problem := func(reason, message string) *status.Placement {
		return &status.Placement{Status: metav1.ConditionFalse, Reason: reason, Message: message}
	}
	if !metav1.IsControlledBy(existing, s.domain) {
		s.requeueAfter(blockedRetry)
		return workloadapi.Observed{}, problem(v1beta1.ComputeDomainReasonPodGroupConflict, fmt.Sprintf(
			"PodGroup %s exists and is not controlled by this ComputeDomain; the controller leaves it alone, and pods that name it get its placement, not the domain's; delete it to have the domain's made", key)), nil
	}
	observed, err := workloadapi.Observe(existing)
	if err != nil {
		return observed, nil, err
	}
	if !observed.Gang {
		return observed, problem(v1beta1.ComputeDomainReasonPodGroupChanged, fmt.Sprintf(
			"PodGroup %s is not a gang (its policy cannot change); delete it to have it made again as a gang of %d pods", key, n)), nil
	}
	if observed.MinCount != n {
		if err := r.restoreMinCount(ctx, existing, n); err != nil {
			return observed, nil, fmt.Errorf("PodGroup %s: %w", key, err)
		}
	}
	if observed.TopologyKey != "" && observed.TopologyKey != PlacementTopologyKey {
		return observed, problem(v1beta1.ComputeDomainReasonPodGroupChanged, fmt.Sprintf(
			"PodGroup %s's topology constraint is on %s, not %s (it cannot change); delete the PodGroup to have it made again", key, observed.TopologyKey, PlacementTopologyKey)), nil
	}
	return observed, nil, nil
}

// refuseBeyondCliques says ExceedsClique, and looks again later, when the domain's spec.numNodes does not fit
// in any clique; it tells whether it did.
func (r *Reconciler) refuseBeyondCliques(ctx context.Context, s *scope) (bool, error) {
	refusal, err := r.cliqueRefusal(ctx, s.domain, *s.plan)
	if err != nil || refusal == "" {
		return false, err
	}
	s.placement = &status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonExceedsClique, Message: refusal}
	s.requeueAfter(refusedRetry)
	return true, nil
}

// restoreMinCount sets the controller's PodGroup back to the domain's gang size (minCount is the one field
// of a gang that can change).
func (r *Reconciler) restoreMinCount(ctx context.Context, existing client.Object, n int32) error {
	want, err := workloadapi.WithMinCount(existing, n)
	if err != nil {
		return err
	}
	if err := r.client.Patch(ctx, want, client.MergeFrom(existing)); err != nil {
		return fmt.Errorf("restore minCount %d: %w", n, err)
	}
	klog.FromContext(ctx).V(2).Info("Restored the PodGroup's gang size", "podGroup", klog.KObj(existing), "minCount", n)
	return nil
}

// cliqueRefusal says why no clique can hold the largest slice of the domain's plan, or "" when one can: the
// largest clique (nodes labeled with the same clique, from the cache of Node metadata). (The plan's slices never
// exceed MaxNodesPerClique, the most one IMEX ensemble takes.)
func (r *Reconciler) cliqueRefusal(ctx context.Context, cd *v1beta1.ComputeDomain, plan sliceplan.Plan) (string, error) {
	sizes, err := r.cliqueSizes(ctx)
	if err != nil {
		return "", err
	}
	largest, name := LargestClique(sizes)
	capacity := min(largest, r.cfg.MaxNodesPerClique)
	slice := plan.Slices[0].Size
	if slice > capacity {
		where := fmt.Sprintf("the largest NVLink clique, %s, has %d nodes", name, largest)
		if largest == 0 {
			where = "no node carries the NVLink clique label " + PlacementTopologyKey
		}
		what := fmt.Sprintf("spec.numNodes %d does not fit in one NVLink clique", cd.Spec.NumNodes)
		if len(plan.Slices) > 1 {
			what = fmt.Sprintf("spec.numNodes %d is placed as %d slices (%s), and a slice of %d does not fit in one NVLink clique", cd.Spec.NumNodes, len(plan.Slices), plan.Summary(), slice)
		}
		return fmt.Sprintf("%s: %s; nothing is placed, so the domain's pods stay unscheduled (set spec.sliceSize to a divisor of %d of at most %d, or leave spec.numNodes 0 for a domain placed by its pods' own affinity)",
			what, where, cd.Spec.NumNodes, max(capacity, 1)), nil
	}
	// Every slice needs a clique with room for it: a clique of n nodes holds n/slice slices at most.
	holds, cliques := 0, 0
	for _, n := range sizes {
		if fit := min(n, r.cfg.MaxNodesPerClique) / slice; fit > 0 {
			holds += fit
			cliques++
		}
	}
	if holds < len(plan.Slices) {
		return fmt.Sprintf("spec.numNodes %d is placed as %d slices (%s), and the cluster's NVLink cliques have room for only %d of its slices of %d (cliques of at least %d nodes: %d): nothing is placed, so the domain's pods stay unscheduled until racks are added",
			cd.Spec.NumNodes, len(plan.Slices), plan.Summary(), holds, slice, slice, cliques), nil
	}
	return "", nil
}

// cliqueSizes counts the nodes of each NVLink clique: from the index the Node metadata events keep, or, before
// it has seen every node (or without it), from a list of the cached Node metadata.
func (r *Reconciler) cliqueSizes(ctx context.Context) (map[string]int, error) {
	if r.cliques != nil {
		if sizes, ok := r.cliques.Sizes(); ok {
			return sizes, nil
		}
	}
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.client.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list nodes for their NVLink cliques: %w", err)
	}
	sizes := map[string]int{}
	for _, n := range nodes.Items {
		if c := n.Labels[PlacementTopologyKey]; c != "" {
			sizes[c]++
		}
	}
	return sizes, nil
}

// LargestClique returns the size and name of the largest clique in sizes (the first name in order among
// equals); 0 and "" when there is none.
func LargestClique(sizes map[string]int) (int, string) {
	names := make([]string, 0, len(sizes))
	for c := range sizes {
		names = append(names, c)
	}
	sort.Strings(names)
	largest, name := 0, ""
	for _, c := range names {
		if sizes[c] > largest {
			largest, name = sizes[c], c
		}
	}
	return largest, name
}
