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

package cliqueplacement

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/status"
)

// ControllerName names the fallback's controller in logs and metrics.
const ControllerName = "clique-placement"

// A domain whose pods wait for a clique with enough free nodes looks again after noCliqueRetry, doubling at each
// look that finds none, up to maxNoCliqueRetry: capacity frees when other claims go, and the fallback does not
// watch every claim of the cluster, but each look lists them all, and every pod placed by the fallback.
const (
	noCliqueRetry    = 2 * time.Second
	maxNoCliqueRetry = time.Minute
)

// conflictRetry is how soon a release that met a stale pod is tried again.
const conflictRetry = 200 * time.Millisecond

// Options are what the fallback needs.
type Options struct {
	// Client reads ComputeDomains and Node metadata (the manager's cache) and updates the held pods.
	Client client.Client
	// APIReader reads live, for the pick: every allocated claim and every released pod.
	APIReader client.Reader
	// Pods reads the pods labeled v1beta1.PlacementDomainLabelKey (the fallback's own cache: NewPodCache).
	Pods client.Reader
	// GPUDriver is the driver whose allocated devices make a node busy.
	GPUDriver string
	// Verdicts takes what the fallback finds for each domain.
	Verdicts *Verdicts
}

// Reconciler releases each domain's held pods into one clique.
type Reconciler struct {
	client    client.Client
	apiReader client.Reader
	pods      client.Reader
	gpuDriver string
	verdicts  *Verdicts
	// pickMu serializes the picks: the next domain's pick sees this one's released pods.
	pickMu sync.Mutex
	// picks holds, by domain UID, the clique picked for a domain until the pod cache shows its pods released
	// (their annotation names it then), so that a reconcile on a stale cache does not pick again.
	picks sync.Map
	// noCliqueBackoff spaces, per domain, the looks for a clique with room.
	noCliqueBackoff workqueue.TypedRateLimiter[types.NamespacedName]
}

// New returns the fallback's reconciler.
func New(o Options) *Reconciler {
	return &Reconciler{
		client: o.Client, apiReader: o.APIReader, pods: o.Pods, gpuDriver: o.GPUDriver, verdicts: o.Verdicts,
		noCliqueBackoff: workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](noCliqueRetry, maxNoCliqueRetry),
	}
}

// NewPodCache is the fallback's cache of the pods labeled v1beta1.PlacementDomainLabelKey in every namespace,
// run by mgr: the manager's own cache selects other pods (one cache holds one selection per kind).
func NewPodCache(restConfig *rest.Config, mgr ctrl.Manager) (cache.Cache, error) {
	labeled, err := labels.NewRequirement(v1beta1.PlacementDomainLabelKey, selection.Exists, nil)
	if err != nil {
		return nil, fmt.Errorf("select the clique placement's pods: %w", err)
	}
	c, err := cache.New(restConfig, cache.Options{
		Scheme:     mgr.GetScheme(),
		Mapper:     mgr.GetRESTMapper(),
		HTTPClient: mgr.GetHTTPClient(),
		ByObject:   map[client.Object]cache.ByObject{&corev1.Pod{}: {Label: labels.NewSelector().Add(*labeled)}},
	})
	if err != nil {
		return nil, fmt.Errorf("cache of the clique placement's pods: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("run the cache of the clique placement's pods: %w", err)
	}
	return c, nil
}

// SetupWithManager registers the controller: a domain is looked at when it is created, its spec changes or it
// goes, and when one of its pods in pods (the cache of NewPodCache, the one Options.Pods reads) changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, pods cache.Cache) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1beta1.ComputeDomain{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Kind(pods, client.Object(&corev1.Pod{}), handler.EnqueueRequestsFromMapFunc(r.domainOfPod))).
		Complete(r)
}

// Reconcile finds the domain's held and released pods, picks the clique once all spec.numNodes pods exist (or
// keeps the one its released pods name, after a restart or for a replacement pod), releases the held pods into
// it, and records the verdict.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cd := &v1beta1.ComputeDomain{}
	if err := r.client.Get(ctx, req.NamespacedName, cd); err != nil {
		if apierrors.IsNotFound(err) {
			r.verdicts.forget(req.NamespacedName)
			r.noCliqueBackoff.Forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get ComputeDomain %s: %w", req.NamespacedName, err)
	}
	if cd.DeletionTimestamp != nil || cd.Spec.NumNodes == 0 {
		r.verdicts.forget(req.NamespacedName)
		r.noCliqueBackoff.Forget(req.NamespacedName)
		r.picks.Delete(cd.UID)
		return ctrl.Result{}, nil
	}
	p, retry, err := r.place(ctx, cd)
	if err != nil {
		return ctrl.Result{}, err
	}
	if p.Reason == v1beta1.ComputeDomainReasonNoCliqueFree {
		retry = r.noCliqueBackoff.When(req.NamespacedName)
	} else {
		r.noCliqueBackoff.Forget(req.NamespacedName)
	}
	r.verdicts.set(ctx, cd, p)
	return ctrl.Result{RequeueAfter: retry}, nil
}

// place is one pass over the domain's pods: the placement it found, and how soon to look again without an event.
func (r *Reconciler) place(ctx context.Context, cd *v1beta1.ComputeDomain) (status.Placement, time.Duration, error) {
	var pods corev1.PodList
	if err := r.pods.List(ctx, &pods, client.InNamespace(cd.Namespace), client.MatchingLabels{v1beta1.PlacementDomainLabelKey: v1beta1.PlacementDomainLabelValue(cd.Name)}); err != nil {
		return status.Placement{}, 0, fmt.Errorf("list the pods held for the domain's clique: %w", err)
	}
	var waiting []*corev1.Pod
	present, clique := 0, ""
	for i := range pods.Items {
		p := &pods.Items[i]
		if finished(p) {
			continue
		}
		present++
		switch {
		case held(p):
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
	switch {
	case len(waiting) == 0 && clique != "":
		return placed(need, clique), 0, nil
	case len(waiting) == 0:
		// No pod came through the webhook (yet).
		return status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonWorkloadAPIUnavailable, Message: fmt.Sprintf(
			"the cluster does not serve the Workload API (%s PodGroups); no pod of the domain is held for clique placement yet (the chart's webhook.podGroups holds them; pods created without it are placed one by one wherever their own affinity allows)",
			"scheduling.k8s.io/v1beta1")}, 0, nil
	case clique == "" && present < need:
		return status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonWaitingForPods, Message: fmt.Sprintf(
			"%d of the domain's %d pods are held for clique placement; they are released together, into one NVLink clique, once all %d exist", present, need, need)}, 0, nil
	}
	if clique == "" {
		r.pickMu.Lock()
		defer r.pickMu.Unlock()
		var free capacity
		var err error
		if clique, free, err = r.pickClique(ctx, need); err != nil {
			return status.Placement{}, 0, err
		}
		if clique == "" {
			msg := fmt.Sprintf("no NVLink clique has %d free nodes for the domain's pods (%s); all %d stay held until one has", need, free, need)
			// Reconcile spaces the next look (noCliqueBackoff).
			return status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonNoCliqueFree, Message: msg, Unschedulable: msg}, 0, nil
		}
		klog.FromContext(ctx).Info("Picked the domain's NVLink clique", "clique", clique, "pods", need, "free", free[clique])
		r.picks.Store(cd.UID, clique)
	}
	for _, p := range waiting {
		err := r.client.Update(ctx, pinToClique(p, clique))
		if apierrors.IsConflict(err) {
			// The cache's copy is stale (the pod was released already, or changed): look again with the
			// cache caught up. Pods released before stay so; their annotation keeps the clique.
			return placed(need, clique), conflictRetry, nil
		}
		if err != nil {
			return status.Placement{}, 0, fmt.Errorf("release pod %s into clique %s: %w", klog.KObj(p), clique, err)
		}
	}
	return placed(need, clique), 0, nil
}

// placed is the verdict on a domain whose pods were released into clique.
func placed(need int, clique string) status.Placement {
	return status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonCliqueAffinity, Message: fmt.Sprintf(
		"the cluster does not serve the Workload API; the controller pinned the domain's %d pods to NVLink clique %s with required node affinity on %s and released them together: not a scheduler gang (a node taken by another pod after the pick leaves a pod Pending until one frees), but never split across cliques",
		need, clique, TopologyKey)}
}

// pickClique picks a clique with need free nodes from live reads (the cluster's allocated claims and the pods
// released before, which the cache may not show yet; the domains they belong to from the cache) and returns it
// with the capacity it saw; "" when none has.
// The caller holds pickMu.
func (r *Reconciler) pickClique(ctx context.Context, need int) (string, capacity, error) {
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
	var domains v1beta1.ComputeDomainList
	if err := r.client.List(ctx, &domains); err != nil {
		return "", nil, fmt.Errorf("list the ComputeDomains whose pods are released into cliques: %w", err)
	}
	free := freeCapacity(nodes.Items, claims.Items, r.gpuDriver, released.Items, managedDomains(domains.Items))
	return free.pick(need), free, nil
}

// domainOfPod maps a held or released pod to its domain: the label's value is the domain's name when the name
// fits a label value, and otherwise a hashed value (v1beta1.PlacementDomainLabelValue), matched against the
// names of the domains in the pod's namespace.
func (r *Reconciler) domainOfPod(ctx context.Context, o client.Object) []reconcile.Request {
	value := o.GetLabels()[v1beta1.PlacementDomainLabelKey]
	if value == "" {
		return nil
	}
	if !strings.Contains(value, "_") {
		// A name: a DNS subdomain never holds "_", a hashed value always does.
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: value}}}
	}
	var domains v1beta1.ComputeDomainList
	if err := r.client.List(ctx, &domains, client.InNamespace(o.GetNamespace())); err != nil {
		klog.FromContext(ctx).Error(err, "List the ComputeDomains of a pod held for clique placement", "pod", klog.KObj(o))
		return nil
	}
	var reqs []reconcile.Request
	for i := range domains.Items {
		if cd := &domains.Items[i]; v1beta1.PlacementDomainLabelValue(cd.Name) == value {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cd)})
		}
	}
	return reqs
}
