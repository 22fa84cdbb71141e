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
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
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
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/status"
	"github.com/computedomain-operator/computedomain-operator/internal/sliceplan"
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
	// MaxNodesPerClique is the most nodes one clique's IMEX ensemble takes: the slice plan's clique size.
	MaxNodesPerClique int
}

// Reconciler releases each domain's held pods into one clique.
type Reconciler struct {
	client    client.Client
	apiReader client.Reader
	pods      client.Reader
	gpuDriver string
	verdicts  *Verdicts
	// maxPerClique is the slice plan's clique size (Options.MaxNodesPerClique).
	maxPerClique int
	// pickMu serializes the picks: the next domain's pick sees this one's released pods.
	pickMu sync.Mutex
	// picks holds, by domain UID, the cliques picked for a domain's slices (a pick) until the pod cache shows
	// every slice released (their annotations name them then), so that a reconcile on a stale cache does not
	// pick again, and the next domain's pick leaves them alone.
	picks sync.Map
	// noCliqueBackoff spaces, per domain, the looks for a clique with room.
	noCliqueBackoff workqueue.TypedRateLimiter[types.NamespacedName]
	// escapes finds the domain's pods that were admitted without being held.
	escapes *Escapes
}

// New returns the fallback's reconciler.
func New(o Options) *Reconciler {
	return &Reconciler{
		client: o.Client, apiReader: o.APIReader, pods: o.Pods, gpuDriver: o.GPUDriver, verdicts: o.Verdicts,
		maxPerClique:    cmp.Or(o.MaxNodesPerClique, v1beta1.NVL72CliqueSize),
		noCliqueBackoff: workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](noCliqueRetry, maxNoCliqueRetry),
		escapes:         NewEscapes(o.APIReader),
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
// goes, and when one of its pods in pods (the cache of NewPodCache, the one Options.Pods reads) changes, unless
// the pod had finished already (changedUnlessFinished).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, pods cache.Cache) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1beta1.ComputeDomain{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Kind(pods, client.Object(&corev1.Pod{}), handler.EnqueueRequestsFromMapFunc(r.domainOfPod), changedUnlessFinished)).
		Complete(r)
}

// changedUnlessFinished passes every pod event but an update of a pod that had finished already: a finished
// pod holds no tray and takes no part in a placement, whatever else of it changes. Kubernetes 1.37.2's
// resource claim controller rewrites a finished gang pod's status.resourceClaimStatuses several times a
// second for as long as the pod exists (it makes the pod's deleted claims again, docs/install.md), and each
// write would otherwise bring a pass over the domain's pods.
var changedUnlessFinished = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool { return !podFinished(e.ObjectOld) || !podFinished(e.ObjectNew) },
}

// podFinished says whether o is a pod in phase Succeeded or Failed.
func podFinished(o client.Object) bool {
	p, ok := o.(*corev1.Pod)
	return ok && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed)
}

// Reconcile finds the domain's held and released pods, picks the cliques of its slices once all their pods exist
// (or keeps those its released pods name, after a restart or for a replacement pod), releases the held pods into
// them, and records the verdict. A domain none of whose pods the webhook held has no verdict.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cd := &v1beta1.ComputeDomain{}
	if err := r.client.Get(ctx, req.NamespacedName, cd); err != nil {
		if apierrors.IsNotFound(err) {
			r.verdicts.forget(req.NamespacedName)
			r.noCliqueBackoff.Forget(req.NamespacedName)
			r.forgetPicks(req.NamespacedName)
			r.escapes.Forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get ComputeDomain %s: %w", req.NamespacedName, err)
	}
	if cd.DeletionTimestamp != nil || cd.Spec.NumNodes == 0 {
		r.verdicts.forget(req.NamespacedName)
		r.noCliqueBackoff.Forget(req.NamespacedName)
		r.picks.Delete(cd.UID)
		r.escapes.Forget(req.NamespacedName)
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
	if p.Reason == "" {
		r.verdicts.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	r.verdicts.set(ctx, cd, p)
	return ctrl.Result{RequeueAfter: retry}, nil
}

// place is one pass over the domain's pods: the placement it found (none, an empty Reason, when no pod of the
// domain is held or was released by the fallback), and how soon to look again without an event.
func (r *Reconciler) place(ctx context.Context, cd *v1beta1.ComputeDomain) (status.Placement, time.Duration, error) {
	plan, err := sliceplan.ForDomain(cd, r.maxPerClique)
	if err != nil {
		// The ComputeDomain controller refuses the domain (ExceedsClique) and says why.
		return status.Placement{}, 0, nil
	}
	var pods corev1.PodList
	if err := r.pods.List(ctx, &pods, client.InNamespace(cd.Namespace), client.MatchingLabels{v1beta1.PlacementDomainLabelKey: v1beta1.PlacementDomainLabelValue(cd.Name)}); err != nil {
		return status.Placement{}, 0, fmt.Errorf("list the pods held for the domain's clique: %w", err)
	}
	m := members(plan, pods.Items)
	if len(m.waiting) == 0 && !m.released {
		// No pod came through the webhook to be held (yet), or the scheduler places them (Workload API).
		r.picks.Delete(cd.UID)
		return status.Placement{}, 0, nil
	}
	cliques := maps.Clone(m.cliques)
	if v, ok := r.picks.Load(cd.UID); ok {
		// Picked a moment ago, and the cache does not show every slice released yet: the same cliques, not a
		// second pick. Once it shows them all, the pods' annotations hold the cliques.
		for i, c := range v.(pick).cliques {
			if cliques[i] == "" {
				cliques[i] = c
			}
		}
		if len(m.cliques) == len(plan.Slices) {
			r.picks.Delete(cd.UID)
		}
	}
	need := int(cd.Spec.NumNodes)
	var unplaced []sliceplan.Slice
	for _, sl := range plan.Slices {
		if cliques[sl.Index] == "" {
			unplaced = append(unplaced, sl)
		}
	}
	if len(unplaced) > 0 {
		missing := 0
		for _, sl := range unplaced {
			missing += sl.Size - m.count[sl.Index]
		}
		if missing > 0 {
			return r.waitingForPods(ctx, cd, plan, m.present)
		}
		r.pickMu.Lock()
		defer r.pickMu.Unlock()
		picked, free, err := r.pickCliques(ctx, cd.UID, unplaced, cliques)
		var short *sliceplan.Shortfall
		if errors.As(err, &short) {
			msg := fmt.Sprintf("no NVLink clique has %d free nodes for the domain's pods (%s); all %d stay held until one has", short.Size, free, need)
			if len(plan.Slices) > 1 {
				msg = fmt.Sprintf("the domain's %d slices (%s) need %d NVLink cliques with %d free nodes each, found %d (%s); all %d pods stay held until enough have room",
					len(plan.Slices), plan.Summary(), short.Need, short.Size, short.Found, free, need)
			}
			// Reconcile spaces the next look (noCliqueBackoff).
			return status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonNoCliqueFree, Message: msg, Unschedulable: msg}, 0, nil
		}
		if err != nil {
			return status.Placement{}, 0, err
		}
		klog.FromContext(ctx).Info("Picked the domain's NVLink cliques", "slices", picked, "pods", need)
		maps.Copy(cliques, picked)
		r.picks.Store(cd.UID, newPick(cd, plan, cliques))
	}
	for _, w := range m.waiting {
		err := r.client.Update(ctx, pinToClique(w.pod, cliques[w.slice]))
		if apierrors.IsConflict(err) {
			// The cache's copy is stale (the pod was released already, or changed): look again with the
			// cache caught up. Pods released before stay so; their annotation keeps the clique.
			return placed(plan, cliques), conflictRetry, nil
		}
		if err != nil {
			return status.Placement{}, 0, fmt.Errorf("release pod %s into clique %s: %w", klog.KObj(w.pod), cliques[w.slice], err)
		}
	}
	return placed(plan, cliques), 0, nil
}

// waitingForPods is the verdict on a domain that has fewer held pods than it needs: it waits for the rest, unless
// some of its pods were admitted without being held (the API server could not call the pod-group webhook, whose
// failure policy is Ignore). Those will never be held, so the held ones would wait for good: the verdict names
// them and says what to do, and the domain is looked at again after EscapeCheckInterval.
func (r *Reconciler) waitingForPods(ctx context.Context, cd *v1beta1.ComputeDomain, plan sliceplan.Plan, held int) (status.Placement, time.Duration, error) {
	need := int(cd.Spec.NumNodes)
	escaped, err := r.escapes.Of(ctx, cd)
	if err != nil {
		return status.Placement{}, 0, err
	}
	if len(escaped) == 0 {
		return status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonWaitingForPods, Message: fmt.Sprintf(
			"%d of the domain's %d pods are held for clique placement; they are released together, %s, once all %d exist", held, need, IntoWhat(plan), need)}, EscapeCheckInterval, nil
	}
	msg := fmt.Sprintf("%d of the domain's %d pods are held for clique placement, but pods that use its claim template %s were admitted without being held (the API server could not call the pod-group webhook, whose failure policy is Ignore): %s. "+
		"Those will never be held, so the held pods are not released; delete them (their controller recreates them through the webhook) to have all %d placed together, %s",
		held, need, cd.Spec.Channel.ResourceClaimTemplate.Name, NamePods(escaped), need, IntoWhat(plan))
	return status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonPodsNotHeld, Message: msg, Unschedulable: msg}, EscapeCheckInterval, nil
}

// forgetPicks drops the picks of a domain that is gone (by its name: its UID is not known any more).
func (r *Reconciler) forgetPicks(key types.NamespacedName) {
	gone := domainKey{key.Namespace, v1beta1.PlacementDomainLabelValue(key.Name)}
	r.picks.Range(func(uid, v any) bool {
		if v.(pick).domain == gone {
			r.picks.Delete(uid)
		}
		return true
	})
}

// pick is the cliques picked for a domain's slices.
type pick struct {
	// domain is the domain as its pods name it.
	domain domainKey
	// cliques is the clique of each slice, by slice index.
	cliques map[int]string
	// sizes is the size of the slice placed in each clique.
	sizes map[string]int
}

func newPick(cd *v1beta1.ComputeDomain, plan sliceplan.Plan, cliques map[int]string) pick {
	pk := pick{domain: domainKey{cd.Namespace, v1beta1.PlacementDomainLabelValue(cd.Name)}, cliques: maps.Clone(cliques), sizes: map[string]int{}}
	for _, sl := range plan.Slices {
		if c := cliques[sl.Index]; c != "" {
			pk.sizes[c] = sl.Size
		}
	}
	return pk
}

// IntoWhat says where the fallback releases a plan's pods, for messages.
func IntoWhat(plan sliceplan.Plan) string {
	if len(plan.Slices) == 1 {
		return "into one NVLink clique"
	}
	return fmt.Sprintf("as %d slices (%s) of consecutive ranks, each into its own NVLink clique", len(plan.Slices), plan.Summary())
}

// placed is the verdict on a domain whose pods were released into the cliques of its slices.
func placed(plan sliceplan.Plan, cliques map[int]string) status.Placement {
	if len(plan.Slices) == 1 {
		return status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonCliqueAffinity, Message: fmt.Sprintf(
			"the controller pinned the domain's %d pods to NVLink clique %s with required node affinity on %s and released them together: not a scheduler gang (a node taken by another pod after the pick leaves a pod Pending until one frees), but never split across cliques",
			plan.Nodes(), cliques[0], TopologyKey)}
	}
	parts := make([]string, len(plan.Slices))
	for i, sl := range plan.Slices {
		parts[i] = fmt.Sprintf("ranks %d-%d in %s", sl.First, sl.Last(), cliques[sl.Index])
	}
	return status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonSliceAffinity, Message: fmt.Sprintf(
		"the controller pinned the domain's %d slices to their own NVLink cliques with required node affinity on %s and released them together (%s): not a scheduler gang (a node taken by another pod after the pick leaves a pod Pending until one frees), but no slice is split across cliques and none starts while another cannot fit",
		len(plan.Slices), TopologyKey, strings.Join(parts, "; "))}
}

// pickCliques picks a clique for each of a domain's unplaced slices from live reads (the cluster's allocated
// claims and the pods released before, which the cache may not show yet; the domains they belong to from the
// cache), never one that another slice of the domain holds (cliques). It returns the picks and the capacity it
// saw; a *sliceplan.Shortfall when they do not all fit.
// The caller holds pickMu.
func (r *Reconciler) pickCliques(ctx context.Context, uid types.UID, unplaced []sliceplan.Slice, cliques map[int]string) (map[int]string, Capacity, error) {
	// The other domains' picks, which the live read of their pods may not show yet.
	inFlight := map[domainKey]map[string]int{}
	r.picks.Range(func(k, v any) bool {
		if k.(types.UID) != uid {
			pk := v.(pick)
			inFlight[pk.domain] = pk.sizes
		}
		return true
	})
	free, err := readCapacity(ctx, r.client, r.apiReader, r.gpuDriver, r.maxPerClique, inFlight)
	if err != nil {
		return nil, nil, err
	}
	open := Capacity{}
	for c, n := range free {
		open[c] = n
	}
	for _, c := range cliques {
		delete(open, c)
	}
	picked, err := sliceplan.Assign(sliceplan.Plan{Slices: unplaced}, open)
	return picked, free, err
}

// FreeCapacity reads the free nodes of every NVLink clique: the cluster's nodes and domains from cached (Node
// metadata and ComputeDomains), and live from apiReader the allocated claims (a node is busy when a claim holds
// a device of gpuDriver there) and the pods the fallback released that are not bound yet (the cache may not show
// them yet), with the domains' slice plans for cliques of perClique nodes. The result prints as "free nodes per
// clique: a: 3, b: 16".
func FreeCapacity(ctx context.Context, cached, apiReader client.Reader, gpuDriver string, perClique int) (Capacity, error) {
	return readCapacity(ctx, cached, apiReader, gpuDriver, perClique, nil)
}

// readCapacity is FreeCapacity with the picks of this process that the live read may not show yet (inFlight:
// slice size by clique, by domain).
func readCapacity(ctx context.Context, cached, apiReader client.Reader, gpuDriver string, perClique int, inFlight map[domainKey]map[string]int) (Capacity, error) {
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := cached.List(ctx, nodes); err != nil {
		return nil, fmt.Errorf("list nodes for their NVLink cliques: %w", err)
	}
	var claims resourcev1.ResourceClaimList
	if err := apiReader.List(ctx, &claims); err != nil {
		return nil, fmt.Errorf("list ResourceClaims for the cliques' free nodes: %w", err)
	}
	var released corev1.PodList
	if err := apiReader.List(ctx, &released, client.HasLabels{v1beta1.PlacementDomainLabelKey}); err != nil {
		return nil, fmt.Errorf("list the pods released into cliques: %w", err)
	}
	var domains v1beta1.ComputeDomainList
	if err := cached.List(ctx, &domains); err != nil {
		return nil, fmt.Errorf("list the ComputeDomains whose pods are released into cliques: %w", err)
	}
	return freeCapacity(nodes.Items, claims.Items, gpuDriver, released.Items, managedDomains(domains.Items, perClique), inFlight), nil
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
