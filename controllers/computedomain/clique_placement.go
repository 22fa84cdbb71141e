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
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/status"
)

// The clique placement fallback, for clusters without the Workload API: the webhook (webhook.podGroups) holds
// each pod of a domain with spec.numNodes behind v1beta1.CliquePlacementGate; once all spec.numNodes pods
// exist, the controller picks one NVLink clique with that many free nodes from live capacity and releases every
// pod with required node affinity to it, together. It is not a scheduler gang (a tray taken by another pod
// between the pick and the bind leaves a pod Pending until one frees), but it never splits a domain across
// cliques and never lets part of it start while the rest cannot fit.

// noCliqueRetry is how often a domain whose pods wait for a clique with enough free nodes looks again: capacity
// frees when other claims go, and the controller does not watch every claim of the cluster.
const noCliqueRetry = 2 * time.Second

// conflictRetry is how soon a release that met a stale pod is tried again.
const conflictRetry = 200 * time.Millisecond

// cliqueCapacity is the free nodes of each NVLink clique: its labeled nodes less those with an allocated GPU and
// those that released pods of other domains are heading for.
type cliqueCapacity map[string]int

// freeCapacity counts the free nodes per clique from the cluster's nodes (their clique labels), its allocated
// ResourceClaims (a node is busy when a claim holds a device of gpuDriver there) and the pods the fallback
// released that are not bound yet (each takes one node of its clique).
func freeCapacity(nodes []metav1.PartialObjectMetadata, claims []resourcev1.ResourceClaim, gpuDriver string, released []corev1.Pod) cliqueCapacity {
	busy := map[string]bool{}
	for i := range claims {
		c := &claims[i]
		if c.Status.Allocation == nil {
			continue
		}
		holdsGPU := false
		for _, r := range c.Status.Allocation.Devices.Results {
			holdsGPU = holdsGPU || r.Driver == gpuDriver
		}
		if !holdsGPU {
			continue
		}
		for _, n := range claimNodes(c) {
			busy[n] = true
		}
	}
	free := cliqueCapacity{}
	for _, n := range nodes {
		clique := n.Labels[PlacementTopologyKey]
		if clique == "" {
			continue
		}
		if _, seen := free[clique]; !seen {
			free[clique] = 0
		}
		if !busy[n.Name] {
			free[clique]++
		}
	}
	for i := range released {
		p := &released[i]
		if p.Spec.NodeName != "" || podFinished(p) || heldForClique(p) {
			continue
		}
		if c := p.Annotations[v1beta1.PlacementCliqueAnnotationKey]; c != "" {
			free[c]--
		}
	}
	return free
}

// pick is the clique that fits need nodes most tightly (the fewest free nodes that still hold them, so large
// free cliques stay whole for large domains); ties go to the first name. "" when none fits.
func (c cliqueCapacity) pick(need int) string {
	best, bestFree := "", 0
	for _, name := range c.names() {
		if f := c[name]; f >= need && (best == "" || f < bestFree) {
			best, bestFree = name, f
		}
	}
	return best
}

func (c cliqueCapacity) names() []string {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// String lists the free nodes of every clique, for messages.
func (c cliqueCapacity) String() string {
	if len(c) == 0 {
		return "no node carries the NVLink clique label " + PlacementTopologyKey
	}
	parts := make([]string, 0, len(c))
	for _, n := range c.names() {
		parts = append(parts, fmt.Sprintf("%s: %d", n, max(c[n], 0)))
	}
	return "free nodes per clique: " + strings.Join(parts, ", ")
}

// heldForClique tells whether the pod waits behind the clique placement gate.
func heldForClique(p *corev1.Pod) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == v1beta1.CliquePlacementGate {
			return true
		}
	}
	return false
}

func podFinished(p *corev1.Pod) bool {
	return p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// pinToClique is the held pod released into clique: required node affinity to the clique added to every term
// of its own (a pod may only tighten its node affinity while gated), the clique recorded in an annotation, and
// the gate removed, all in one update.
func pinToClique(pod *corev1.Pod, clique string) *corev1.Pod {
	p := pod.DeepCopy()
	req := corev1.NodeSelectorRequirement{Key: PlacementTopologyKey, Operator: corev1.NodeSelectorOpIn, Values: []string{clique}}
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	if p.Spec.Affinity.NodeAffinity == nil {
		p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := p.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchExpressions = append(terms[i].MatchExpressions, req)
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[v1beta1.PlacementCliqueAnnotationKey] = clique
	gates := p.Spec.SchedulingGates[:0:0]
	for _, g := range p.Spec.SchedulingGates {
		if g.Name != v1beta1.CliquePlacementGate {
			gates = append(gates, g)
		}
	}
	p.Spec.SchedulingGates = gates
	return p
}

// reconcileCliquePlacement is the fallback's step for one domain without the Workload API: it finds the
// domain's held and released pods, picks the clique once all spec.numNodes pods exist (or keeps the one its
// released pods name, after a restart or for a replacement pod), releases the held pods into it, and says so in
// the PlacementGuaranteed condition. The pick is durable only on the released pods: a kill before the first
// release leaves every pod held, and the next reconcile picks again from live capacity.
func (r *Reconciler) reconcileCliquePlacement(ctx context.Context, s *scope) error {
	cd := s.domain
	var pods corev1.PodList
	if err := r.placementPods.List(ctx, &pods, client.InNamespace(cd.Namespace), client.MatchingLabels{v1beta1.PlacementDomainLabelKey: cd.Name}); err != nil {
		return fmt.Errorf("list the pods held for the domain's clique: %w", err)
	}
	var waiting []*corev1.Pod
	present, clique := 0, ""
	for i := range pods.Items {
		p := &pods.Items[i]
		if podFinished(p) {
			continue
		}
		present++
		switch {
		case heldForClique(p):
			waiting = append(waiting, p)
		case p.Annotations[v1beta1.PlacementCliqueAnnotationKey] != "":
			clique = p.Annotations[v1beta1.PlacementCliqueAnnotationKey]
		}
	}
	if clique != "" {
		// The cache shows the release: the pods' annotation holds the clique from now on.
		r.picks.Delete(cd.UID)
	} else if picked, ok := r.picks.Load(cd.UID); ok && len(waiting) > 0 {
		// Released a moment ago, and the cache does not show it yet: the same clique, not a second pick.
		clique = picked.(string)
	}
	need := int(cd.Spec.NumNodes)
	placed := func(clique string) {
		s.placement = &status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonCliqueAffinity, Message: fmt.Sprintf(
			"the cluster does not serve the Workload API; the controller pinned the domain's %d pods to NVLink clique %s with required node affinity on %s and released them together: not a scheduler gang (a node taken by another pod after the pick leaves a pod Pending until one frees), but never split across cliques",
			need, clique, PlacementTopologyKey)}
	}
	switch {
	case len(waiting) == 0 && clique != "":
		placed(clique)
		return nil
	case len(waiting) == 0:
		// No pod came through the webhook (yet): the plain message, with the fallback named.
		s.placement = &status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonWorkloadAPIUnavailable, Message: fmt.Sprintf(
			"the cluster does not serve the Workload API (%s PodGroups); no pod of the domain is held for clique placement yet (the chart's webhook.podGroups holds them; pods created without it are placed one by one wherever their own affinity allows)",
			"scheduling.k8s.io/v1beta1")}
		return nil
	case clique == "" && present < need:
		s.placement = &status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonWaitingForPods, Message: fmt.Sprintf(
			"%d of the domain's %d pods are held for clique placement; they are released together, into one NVLink clique, once all %d exist", present, need, need)}
		return nil
	}
	if clique == "" {
		// One pick at a time: the next domain's pick sees this one's released pods.
		r.placementMu.Lock()
		defer r.placementMu.Unlock()
		var free cliqueCapacity
		var err error
		if clique, free, err = r.pickClique(ctx, need); err != nil {
			return err
		}
		if clique == "" {
			msg := fmt.Sprintf("no NVLink clique has %d free nodes for the domain's pods (%s); all %d stay held until one has", need, free, need)
			s.placement = &status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonNoCliqueFree, Message: msg, Unschedulable: msg}
			s.requeueAfter(noCliqueRetry)
			return nil
		}
		klog.FromContext(ctx).Info("Picked the domain's NVLink clique", "clique", clique, "pods", need, "free", free[clique])
		r.picks.Store(cd.UID, clique)
	}
	for _, p := range waiting {
		err := r.client.Update(ctx, pinToClique(p, clique))
		if apierrors.IsConflict(err) {
			// The cache's copy is stale (the pod was released already, or changed): look again with the
			// cache caught up. Pods released before stay so; their annotation keeps the clique.
			s.requeueAfter(conflictRetry)
			return nil
		}
		if err != nil {
			return fmt.Errorf("release pod %s into clique %s: %w", klog.KObj(p), clique, err)
		}
	}
	placed(clique)
	return nil
}

// pickClique picks a clique with need free nodes from live reads (the cluster's allocated claims and the pods
// released before, which the cache may not show yet) and returns it with the capacity it saw; "" when none has.
// The caller holds placementMu.
func (r *Reconciler) pickClique(ctx context.Context, need int) (string, cliqueCapacity, error) {
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.client.List(ctx, nodes); err != nil {
		return "", nil, fmt.Errorf("list nodes for their NVLink cliques: %w", err)
	}
	var claims resourcev1.ResourceClaimList
	if err := r.apiReader.List(ctx, &claims); err != nil {
		return "", nil, fmt.Errorf("list ResourceClaims for the cliques' free nodes: %w", err)
	}
	var released corev1.PodList
	if err := r.apiReader.List(ctx, &released, client.HasLabels{v1beta1.PlacementDomainLabelKey}); err != nil {
		return "", nil, fmt.Errorf("list the pods released into cliques: %w", err)
	}
	free := freeCapacity(nodes.Items, claims.Items, r.cfg.GPUDriverName, released.Items)
	return free.pick(need), free, nil
}

// domainOfPlacementPod maps a held or released pod to its domain.
func domainOfPlacementPod(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[v1beta1.PlacementDomainLabelKey]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}
