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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/cliqueplacement"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/status"
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

// reconcilePlacement maintains the domain's PodGroup and finds its PlacementGuaranteed condition: a gang of
// spec.numNodes pods inside one clique when the cluster serves the Workload API, numNodes is set and some
// clique is large enough; otherwise no PodGroup is made and the condition says why. A PodGroup of the
// domain's name that the domain does not control is left alone.
func (r *Reconciler) reconcilePlacement(ctx context.Context, s *scope) error {
	cd := s.domain
	notGuaranteed := func(reason, message string) {
		s.placement = &status.Placement{Status: metav1.ConditionFalse, Reason: reason, Message: message}
	}
	if !r.cluster.WorkloadAPI && r.cluster.Placements != nil && cd.Spec.NumNodes > 0 {
		if refused, err := r.refuseBeyondCliques(ctx, s); refused || err != nil {
			return err
		}
		// The fallback's verdict; until it has looked at the domain, the condition stays as it was.
		if p, ok := r.cluster.Placements.Placement(cd); ok {
			s.placement = &p
		}
		return nil
	}
	if !r.cluster.WorkloadAPI {
		notGuaranteed(v1beta1.ComputeDomainReasonWorkloadAPIUnavailable,
			"the cluster does not serve "+workloadapi.GroupVersion.String()+" PodGroups (kube-apiserver --runtime-config="+
				workloadapi.GroupVersion.String()+"=true and the GenericWorkload gate, seen when the controller started): "+
				"no gang is made, and the workload's pods are placed one by one wherever their own affinity allows")
		return nil
	}
	if cd.Spec.NumNodes == 0 {
		notGuaranteed(v1beta1.ComputeDomainReasonNumNodesUnset,
			"spec.numNodes is 0, so the gang's size is unknown and no PodGroup is made; set spec.numNodes to the number of the workload's pods (one per node), or create a PodGroup yourself")
		return nil
	}
	existing := workloadapi.NewPodGroup()
	key := client.ObjectKey{Namespace: cd.Namespace, Name: v1beta1.ComputeDomainPodGroupName(cd)}
	err := r.client.Get(ctx, key, existing)
	switch {
	case apierrors.IsNotFound(err):
		// Refused before anything is created: a gang that no clique can hold would wait forever.
		if refused, err := r.refuseBeyondCliques(ctx, s); refused || err != nil {
			return err
		}
		// The cache holds only the controller's PodGroups: a foreign one of that name shows only live.
		if existing, err = r.createUnlessLive(ctx, DomainGang(cd).PodGroup(), workloadapi.NewPodGroup()); err != nil {
			return fmt.Errorf("PodGroup %s: %w", key, err)
		}
	case err != nil:
		return fmt.Errorf("get PodGroup %s: %w", key, err)
	}
	if !metav1.IsControlledBy(existing, cd) {
		notGuaranteed(v1beta1.ComputeDomainReasonPodGroupConflict, fmt.Sprintf(
			"PodGroup %s exists and is not controlled by this ComputeDomain; the controller leaves it alone, and pods that name it get its placement, not the domain's; delete it to have the domain's made", key))
		s.requeueAfter(blockedRetry)
		return nil
	}
	observed, err := workloadapi.Observe(existing)
	if err != nil {
		return err
	}
	if !observed.Gang {
		notGuaranteed(v1beta1.ComputeDomainReasonPodGroupChanged, fmt.Sprintf(
			"PodGroup %s is not a gang (its policy cannot change); delete it to have it made again as a gang of %d pods", key, cd.Spec.NumNodes))
		return nil
	}
	if observed.MinCount != cd.Spec.NumNodes {
		if err := r.restoreMinCount(ctx, existing, cd.Spec.NumNodes); err != nil {
			return fmt.Errorf("PodGroup %s: %w", key, err)
		}
	}
	switch observed.TopologyKey {
	case PlacementTopologyKey:
	case "":
		notGuaranteed(v1beta1.ComputeDomainReasonTopologyUnsupported, fmt.Sprintf(
			"the API server dropped PodGroup %s's topology constraint on %s (the TopologyAwareWorkloadScheduling gate is off): the gang of %d pods is all-or-nothing but may span NVLink cliques",
			key, PlacementTopologyKey, cd.Spec.NumNodes))
		return nil
	default:
		notGuaranteed(v1beta1.ComputeDomainReasonPodGroupChanged, fmt.Sprintf(
			"PodGroup %s's topology constraint is on %s, not %s (it cannot change); delete the PodGroup to have it made again", key, observed.TopologyKey, PlacementTopologyKey))
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
	return nil
}

// refuseBeyondCliques says ExceedsClique, and looks again later, when the domain's spec.numNodes does not fit
// in any clique; it tells whether it did.
func (r *Reconciler) refuseBeyondCliques(ctx context.Context, s *scope) (bool, error) {
	refusal, err := r.cliqueRefusal(ctx, s.domain)
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

// cliqueRefusal says why no clique can hold the domain's gang, or "" when one can: the largest clique
// (nodes labeled with the same clique, from the cache of Node metadata), and at most MaxNodesPerClique
// nodes, the most one IMEX ensemble takes.
func (r *Reconciler) cliqueRefusal(ctx context.Context, cd *v1beta1.ComputeDomain) (string, error) {
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.client.List(ctx, nodes); err != nil {
		return "", fmt.Errorf("list nodes for their NVLink cliques: %w", err)
	}
	sizes := map[string]int{}
	for _, n := range nodes.Items {
		if c := n.Labels[PlacementTopologyKey]; c != "" {
			sizes[c]++
		}
	}
	largest, name := LargestClique(sizes)
	capacity := min(largest, r.cfg.MaxNodesPerClique)
	if int(cd.Spec.NumNodes) <= capacity {
		return "", nil
	}
	var where string
	switch {
	case largest == 0:
		where = "no node carries the NVLink clique label " + PlacementTopologyKey
	case largest > r.cfg.MaxNodesPerClique:
		where = fmt.Sprintf("one IMEX ensemble holds at most %d nodes (largest clique %s: %d nodes)", r.cfg.MaxNodesPerClique, name, largest)
	default:
		where = fmt.Sprintf("the largest NVLink clique, %s, has %d nodes", name, largest)
	}
	return fmt.Sprintf("spec.numNodes %d does not fit in one NVLink clique: %s; no PodGroup is made, so pods that name PodGroup %s stay unscheduled (a domain that spans cliques on purpose leaves spec.numNodes 0, or brings its own PodGroup)",
		cd.Spec.NumNodes, where, v1beta1.ComputeDomainPodGroupName(cd)), nil
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
