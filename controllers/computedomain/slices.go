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
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/cliqueplacement"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/status"
	"github.com/computedomain-operator/computedomain-operator/internal/sliceplan"
	"github.com/computedomain-operator/computedomain-operator/internal/workloadapi"
)

// slicePlan is the domain's slice plan: spec.numNodes over cliques of at most MaxNodesPerClique nodes, in
// spec.sliceSize slices or the default plan. It depends on the spec and the controller's configuration only,
// never on the cluster's state, so the webhook (which assigns pods to slices) and the controller always agree on
// it, and it never changes under a running workload.
func (r *Reconciler) slicePlan(cd *v1beta1.ComputeDomain) (sliceplan.Plan, error) {
	return sliceplan.ForDomain(cd, r.cfg.MaxNodesPerClique)
}

// DomainSlicedGang is the composite gang of a domain placed in more than one slice: a CompositePodGroup that
// needs all its slices at once, one PodGroup per slice (a gang of the slice's pods in one NVLink clique), and
// the Workload they reference, all controlled by the domain so the garbage collector removes them with it.
func DomainSlicedGang(cd *v1beta1.ComputeDomain, plan sliceplan.Plan) workloadapi.SlicedGang {
	g := workloadapi.SlicedGang{
		Namespace:   cd.Namespace,
		Name:        v1beta1.ComputeDomainCompositePodGroupName(cd),
		TopologyKey: PlacementTopologyKey,
		Labels:      domainLabels(cd),
		Annotations: domainAnnotations(cd),
		Owner:       *metav1.NewControllerRef(cd, v1beta1.GroupVersion.WithKind("ComputeDomain")),
	}
	for _, s := range plan.Slices {
		g.Slices = append(g.Slices, workloadapi.Slice{Name: v1beta1.ComputeDomainSlicePodGroupName(cd, s.Index), MinCount: int32(s.Size)})
	}
	return g
}

// reconcileSlicedGang keeps a sliced domain's Workload, CompositePodGroup and slice PodGroups, and finds its
// PlacementGuaranteed condition from them.
func (r *Reconciler) reconcileSlicedGang(ctx context.Context, s *scope) error {
	cd, plan := s.domain, *s.plan
	g := DomainSlicedGang(cd, plan)
	owned := func(want, into client.Object) (client.Object, error) {
		got, err := r.getOrCreate(ctx, cd, want, into)
		if err != nil || metav1.IsControlledBy(got, cd) {
			return got, err
		}
		s.requeueAfter(blockedRetry)
		s.placement = &status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonPodGroupConflict, Message: fmt.Sprintf(
			"%s %s exists and is not controlled by this ComputeDomain; the controller leaves it alone and places nothing; delete it to have the domain's made",
			r.kindOf(want), client.ObjectKeyFromObject(want))}
		return nil, nil
	}
	if w, err := owned(g.Workload(), workloadapi.NewWorkload()); w == nil || err != nil {
		return err
	}
	cpg, err := owned(g.CompositePodGroup(), workloadapi.NewCompositePodGroup())
	if cpg == nil || err != nil {
		return err
	}
	composite, err := workloadapi.ObserveComposite(cpg)
	if err != nil {
		return err
	}
	if !composite.Gang || composite.MinGroupCount != int32(len(plan.Slices)) {
		s.placement = &status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonPodGroupChanged, Message: fmt.Sprintf(
			"CompositePodGroup %s/%s is not a gang of %d slices (its policy cannot change); delete it to have it made again", cd.Namespace, g.Name, len(plan.Slices))}
		return nil
	}
	var unschedulable *metav1.Condition
	for i := range plan.Slices {
		pg, err := owned(g.SlicePodGroup(i), workloadapi.NewPodGroup())
		if pg == nil || err != nil {
			return err
		}
		observed, problem, err := r.checkGang(ctx, s, pg, g.Slices[i].MinCount)
		if err != nil || problem != nil {
			s.placement = problem
			return err
		}
		if observed.TopologyKey == "" {
			s.placement = &status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonTopologyUnsupported, Message: fmt.Sprintf(
				"the API server dropped slice PodGroup %s/%s's topology constraint on %s (the TopologyAwareWorkloadScheduling gate is off): the slices are all-or-nothing but each may span NVLink cliques",
				cd.Namespace, pg.GetName(), PlacementTopologyKey)}
			return nil
		}
		if c := observed.Scheduled; c != nil && c.Status == metav1.ConditionFalse && unschedulable == nil {
			unschedulable = c
		}
		if workloadapi.ParentOf(pg) != g.Name {
			s.placement = &status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonPodGroupChanged, Message: fmt.Sprintf(
				"slice PodGroup %s/%s is not a child of CompositePodGroup %s (the parent cannot change); delete it to have it made again", cd.Namespace, pg.GetName(), g.Name)}
			return nil
		}
	}
	s.placement = &status.Placement{
		Status: metav1.ConditionTrue,
		Reason: v1beta1.ComputeDomainReasonSliceGang,
		Message: fmt.Sprintf("spec.numNodes %d is placed as %d slices (%s) of consecutive ranks: each pod joins its slice's PodGroup (%s … %s) by its index, each slice all in one NVLink clique (%s), all slices or none (CompositePodGroup %s)",
			cd.Spec.NumNodes, len(plan.Slices), plan.Summary(), g.Slices[0].Name, g.Slices[len(g.Slices)-1].Name, PlacementTopologyKey, g.Name),
	}
	if c := composite.Scheduled; c != nil && c.Status == metav1.ConditionFalse {
		unschedulable = c
	}
	if unschedulable != nil {
		// The scheduler reports on each slice PodGroup; its message names nodes, not cliques: the numbers a user
		// acts on (how many cliques with room the slices need, how many have it) come from the cluster's capacity.
		why, err := r.sliceShortfall(ctx, plan)
		if err != nil {
			return err
		}
		s.placement.Unschedulable = fmt.Sprintf("the scheduler places none of the %d slices (%s) of CompositePodGroup %s%s (%s: %s)",
			len(plan.Slices), plan.Summary(), g.Name, why, unschedulable.Reason, unschedulable.Message)
	}
	return r.checkEscapes(ctx, s, composite.Scheduled, "CompositePodGroup "+cd.Namespace+"/"+g.Name)
}

// sliceShortfall says, for messages, how many NVLink cliques with room for the plan's slices the cluster has now
// (": need 4 NVLink cliques with 16 free nodes each, found 3 (free nodes per clique: ...)"); "" when they fit.
func (r *Reconciler) sliceShortfall(ctx context.Context, plan sliceplan.Plan) (string, error) {
	free, err := cliqueplacement.FreeCapacity(ctx, r.client, r.apiReader, r.cfg.GPUDriverName, r.cfg.MaxNodesPerClique)
	if err != nil {
		return "", err
	}
	_, err = sliceplan.Assign(plan, free)
	var short *sliceplan.Shortfall
	if !errors.As(err, &short) {
		return "", nil
	}
	return fmt.Sprintf(": need %d NVLink cliques with %d free nodes each, found %d (%s)", short.Need, short.Size, short.Found, free), nil
}

// observeSlices finds, for each slice of the domain's plan, its pods bound to nodes and the clique they run in,
// from the pods the webhook labeled for the domain (the placement pod cache): a ranked pod belongs to the slice
// of its rank; in a one-slice plan every pod belongs to the slice. Without the pod cache (the webhook's pod
// groups off) only the plan is shown.
func (r *Reconciler) observeSlices(ctx context.Context, s *scope) error {
	cd, plan := s.domain, *s.plan
	out := make([]v1beta1.ComputeDomainSlice, len(plan.Slices))
	for i, sl := range plan.Slices {
		out[i] = v1beta1.ComputeDomainSlice{Index: int32(sl.Index), FirstRank: int32(sl.First), Size: int32(sl.Size)}
		if len(plan.Slices) > 1 && r.cluster.WorkloadAPI && r.cluster.CompositePodGroups {
			out[i].PodGroup = v1beta1.ComputeDomainSlicePodGroupName(cd, sl.Index)
		}
	}
	s.slices = out
	if r.cluster.Pods == nil {
		return nil
	}
	var pods corev1.PodList
	if err := r.cluster.Pods.List(ctx, &pods, client.InNamespace(cd.Namespace),
		client.MatchingLabels{v1beta1.PlacementDomainLabelKey: v1beta1.PlacementDomainLabelValue(cd.Name)}); err != nil {
		return fmt.Errorf("list the domain's pods for its slices: %w", err)
	}
	cliques := make([]map[string]int, len(out))
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		slice := 0
		if len(plan.Slices) > 1 {
			rank, ok, err := sliceplan.RankOf(p.Labels, p.Annotations)
			sl, in := plan.SliceOf(rank)
			if err != nil || !ok || !in {
				continue
			}
			slice = sl.Index
		}
		clique, err := r.nodeClique(ctx, p.Spec.NodeName)
		if err != nil {
			return err
		}
		out[slice].BoundPods++
		if cliques[slice] == nil {
			cliques[slice] = map[string]int{}
		}
		cliques[slice][clique]++
	}
	for i, seen := range cliques {
		out[i].CliqueID = mostPods(seen)
	}
	return nil
}

// nodeClique is the NVLink clique label of a node, from the cache of Node metadata; "" when it has none or is gone.
func (r *Reconciler) nodeClique(ctx context.Context, name string) (string, error) {
	node := &metav1.PartialObjectMetadata{}
	node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	if err := r.client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("get node %s for its NVLink clique: %w", name, err)
	}
	return node.Labels[cliqueplacement.TopologyKey], nil
}

// mostPods is the clique holding the most of a slice's pods (the first name among equals); "" for none.
func mostPods(cliques map[string]int) string {
	names := make([]string, 0, len(cliques))
	for c := range cliques {
		names = append(names, c)
	}
	sort.Strings(names)
	best := ""
	for _, c := range names {
		if c != "" && (best == "" || cliques[c] > cliques[best]) {
			best = c
		}
	}
	return best
}
