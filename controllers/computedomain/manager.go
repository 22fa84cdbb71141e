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

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/cliqueplacement"
	"github.com/computedomain-operator/computedomain-operator/controllers/imexclique"
	"github.com/computedomain-operator/computedomain-operator/internal/allocation"
	"github.com/computedomain-operator/computedomain-operator/internal/workloadapi"
)

// ManagerOptions are what NewManager needs besides the reconciler's Config.
type ManagerOptions struct {
	// Scheme holds the built-in Kubernetes kinds and this repository's kinds.
	Scheme *runtime.Scheme
	// Logger is the manager's and the controller's logger.
	Logger logr.Logger
	// Registerer takes the controller's own metrics (NewMetrics). controller-runtime's metrics stay in its
	// process-global registry (sigs.k8s.io/controller-runtime/pkg/metrics.Registry); whoever serves metrics
	// serves both.
	Registerer prometheus.Registerer
	// Workers is the number of concurrent reconciles (0: one).
	Workers int
	// Manager holds the remaining manager settings (leader election, health probes). Its Scheme, Logger,
	// Metrics, Controller and Cache are overridden.
	Manager ctrl.Options
}

// NewManager returns a manager, not yet started, that runs the ComputeDomain controller for cfg: the
// binary's and the test suites' one wiring of cache, metrics, reconciler and watches. The manager binds no
// metrics server, and the controller's name is not checked for uniqueness, so the controller can run more
// than once in one process (the simulated cluster runs it in-process, the test suites restart it).
func NewManager(ctx context.Context, restConfig *rest.Config, cfg Config, o ManagerOptions) (ctrl.Manager, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("create discovery client: %w", err)
	}
	// Whether the cluster serves PodGroups is looked up once: a watch on a kind the server does not serve
	// would keep the manager from starting, so the PodGroup watch exists only when it does.
	workloadAPI, err := workloadapi.Served(disc)
	if err != nil {
		return nil, err
	}
	composite := false
	if workloadAPI {
		if composite, err = workloadapi.CompositeServed(disc); err != nil {
			return nil, err
		}
	}
	byObject, err := cacheByObject(cfg.OperatorNamespace, workloadAPI, composite)
	if err != nil {
		return nil, err
	}
	opts := o.Manager
	opts.Scheme = o.Scheme
	opts.Logger = o.Logger
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	opts.Controller = ctrlconfig.Controller{SkipNameValidation: ptr.To(true)}
	opts.Cache = cache.Options{ByObject: byObject}
	mgr, err := ctrl.NewManager(restConfig, opts)
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	metrics, err := NewMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	cluster := Cluster{WorkloadAPI: workloadAPI, CompositePodGroups: composite}
	// The fallback places the pods the webhook holds: every domain's on a cluster without the Workload API, a
	// sliced domain's without composite groups, and a sliced domain's pods that carry no rank.
	fallback := cfg.CliquePlacement
	o.Logger.Info("Workload API", "podGroups", workloadAPI, "groupVersion", workloadapi.GroupVersion.String(),
		"compositePodGroups", composite, "compositeGroupVersion", workloadapi.CompositeGroupVersion.String(), "cliquePlacementFallback", fallback)
	if fallback {
		cluster.Placements = cliqueplacement.NewVerdicts()
		pods, err := cliqueplacement.NewPodCache(restConfig, mgr)
		if err != nil {
			return nil, err
		}
		cluster.Pods = pods
		placer := cliqueplacement.New(cliqueplacement.Options{
			Client: metrics.instrument(mgr.GetClient()), APIReader: mgr.GetAPIReader(), Pods: pods,
			GPUDriver: cfg.GPUDriverName, Verdicts: cluster.Placements, MaxNodesPerClique: cfg.MaxNodesPerClique,
		})
		if err := placer.SetupWithManager(mgr, pods); err != nil {
			return nil, err
		}
	}
	r, err := NewReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder(ControllerName), metrics, cfg, cluster)
	if err != nil {
		return nil, err
	}
	if err := r.SetupWithManager(ctx, mgr, o.Workers); err != nil {
		return nil, err
	}
	cliques := imexclique.NewReconciler(mgr.GetClient(), cfg.OperatorNamespace, cfg.MaxNodesPerClique, refusedIMEXNodeEvent(mgr.GetEventRecorder(imexclique.ControllerName)))
	if err := cliques.SetupWithManager(ctx, mgr); err != nil {
		return nil, err
	}
	return mgr, nil
}

// cacheByObject is the manager cache configuration the reconcilers expect: claim templates and PodGroups
// (when the cluster serves them) only when this controller labeled them, ResourceClaims only when generated
// from a domain's workload claim template, IMEXNodes, IMEXCliques and the long-lived IMEX daemon pods only in
// the operator namespace. It keeps the controller's memory independent of the cluster's other workloads.
func cacheByObject(operatorNamespace string, podGroups, composite bool) (map[client.Object]cache.ByObject, error) {
	managed := labels.SelectorFromSet(labels.Set{v1beta1.ManagedByLabelKey: v1beta1.ManagedByLabelValue})
	workload, err := labels.NewRequirement(v1beta1.WorkloadClaimLabelKey, selection.Exists, nil)
	if err != nil {
		return nil, fmt.Errorf("select workload claims: %w", err)
	}
	byObject := map[client.Object]cache.ByObject{
		&resourcev1.ResourceClaimTemplate{}: {Label: managed},
		&resourcev1.ResourceClaim{}:         {Label: labels.NewSelector().Add(*workload)},
		&v1beta1.IMEXNode{}:                 {Namespaces: map[string]cache.Config{operatorNamespace: {}}},
		&v1beta1.IMEXClique{}:               {Namespaces: map[string]cache.Config{operatorNamespace: {}}},
		&corev1.Pod{}: {
			Label:      labels.SelectorFromSet(labels.Set{imexclique.AppLabelKey: imexclique.AppLabelValue, imexclique.ComponentLabelKey: imexclique.ComponentLabelValue}),
			Namespaces: map[string]cache.Config{operatorNamespace: {}},
		},
	}
	if podGroups {
		byObject[workloadapi.NewPodGroup()] = cache.ByObject{Label: managed}
	}
	if composite {
		byObject[workloadapi.NewCompositePodGroup()] = cache.ByObject{Label: managed}
		byObject[workloadapi.NewWorkload()] = cache.ByObject{Label: managed}
	}
	return byObject, nil
}

// SetupWithManager registers the member index and the controller's watches. workers is the number of
// concurrent reconciles; the channel allocator serializes what must be serial.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, workers int) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &resourcev1.ResourceClaim{}, allocatedNodeField, func(o client.Object) []string {
		return claimNodes(o.(*resourcev1.ResourceClaim))
	}); err != nil {
		return fmt.Errorf("index workload ResourceClaims by node: %w", err)
	}
	r.cliques = newCliqueIndex()
	if err := r.cliques.watch(ctx, mgr.GetCache()); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1beta1.ComputeDomain{}).
		Watches(&resourcev1.ResourceClaimTemplate{}, handler.EnqueueRequestsFromMapFunc(domainFromAnnotations)).
		Watches(&resourcev1.ResourceClaim{}, handler.EnqueueRequestsFromMapFunc(domainFromAnnotations), builder.WithPredicates(deletedOnlyIfAllocated)).
		// A node's long-lived daemon pod, its IMEXNode and its clique's ensemble decide whether the domains
		// whose workload runs on the node are ready there (the pod's address decides whether its IMEXNode
		// is trusted: imexclique.TrustNodes).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.domainsOnNodes(func(o client.Object) []string {
			return []string{o.(*corev1.Pod).Spec.NodeName}
		}))).
		Watches(&v1beta1.IMEXNode{}, handler.EnqueueRequestsFromMapFunc(r.domainsOnNodes(func(o client.Object) []string {
			return []string{o.(*v1beta1.IMEXNode).Spec.NodeName}
		}))).
		Watches(&v1beta1.IMEXClique{}, handler.EnqueueRequestsFromMapFunc(r.domainsOnNodes(func(o client.Object) []string {
			var nodes []string
			for _, n := range o.(*v1beta1.IMEXClique).Status.Nodes {
				nodes = append(nodes, n.Name)
			}
			return nodes
		})))
	if r.cluster.Placements != nil {
		// The clique placement fallback's verdict on a domain changed.
		b = b.WatchesRawSource(source.Channel(r.cluster.Placements.Changes(), &handler.EnqueueRequestForObject{}))
	}
	if r.cluster.WorkloadAPI {
		// The domain's PodGroup: its gang size is restored, and the scheduler's verdict on it read.
		b = b.Watches(workloadapi.NewPodGroup(), handler.EnqueueRequestsFromMapFunc(domainFromAnnotations))
	}
	if r.cluster.CompositePodGroups {
		// A sliced domain's CompositePodGroup: the scheduler's verdict on all its slices.
		b = b.Watches(workloadapi.NewCompositePodGroup(), handler.EnqueueRequestsFromMapFunc(domainFromAnnotations))
	}
	return b.WithOptions(controller.Options{MaxConcurrentReconciles: workers}).Complete(r)
}

// allocatedNodeField indexes workload claims by the node they are allocated on.
const allocatedNodeField = "status.allocation.node"

// claimNodes is the node a claim is allocated on, if any.
func claimNodes(c *resourcev1.ResourceClaim) []string {
	if node, ok := allocation.Node(c); ok {
		return []string{node}
	}
	return nil
}

// domainsOnNodes maps an object naming nodes to the domains whose workload claims are allocated there.
func (r *Reconciler) domainsOnNodes(nodesOf func(client.Object) []string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		seen := map[types.NamespacedName]bool{}
		var reqs []reconcile.Request
		for _, node := range nodesOf(o) {
			var claims resourcev1.ResourceClaimList
			if err := r.client.List(ctx, &claims, client.MatchingFields{allocatedNodeField: node}); err != nil {
				continue
			}
			for i := range claims.Items {
				for _, req := range domainFromAnnotations(ctx, &claims.Items[i]) {
					if !seen[req.NamespacedName] {
						seen[req.NamespacedName] = true
						reqs = append(reqs, req)
					}
				}
			}
		}
		return reqs
	}
}

// deletedOnlyIfAllocated passes every claim event but the deletion of a claim that held no allocation: such a
// claim placed no node in the domain and held no channel, and the only figure it counted in, the domain's pods
// waiting to be scheduled, is looked at again by the pass that counted it (checkEscapes requeues while any
// wait). Kubernetes 1.37.2's resource claim controller deletes and makes again, several times a second, the
// claims of a finished pod of a PodGroup for as long as the pod exists (docs/install.md); their deletions
// would each bring a pass over a finished domain.
var deletedOnlyIfAllocated = predicate.Funcs{
	DeleteFunc: func(e event.DeleteEvent) bool {
		c, ok := e.Object.(*resourcev1.ResourceClaim)
		return !ok || c.Status.Allocation != nil || e.DeleteStateUnknown
	},
}

// domainFromAnnotations maps an object the controller created (claim templates, PodGroups) or a workload
// claim generated from its template (which copies the template's annotations) to the domain its
// annotations name.
func domainFromAnnotations(_ context.Context, o client.Object) []reconcile.Request {
	ns, name := o.GetAnnotations()[v1beta1.DomainNamespaceAnnotation], o.GetAnnotations()[v1beta1.DomainNameAnnotation]
	if ns == "" || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// refusedIMEXNodeEvent tells, with a warning event on the IMEXNode, that the controller does not trust it
// (the recorder folds repeats into a series).
func refusedIMEXNodeEvent(recorder EventRecorder) imexclique.RefusedFunc {
	return func(_ context.Context, n *v1beta1.IMEXNode, reason string) {
		recorder.Eventf(n, nil, "Warning", v1beta1.IMEXNodeReasonRefused, "Reconcile", "%s", eventNote("IMEXNode "+n.Name+" ignored: "+reason))
	}
}
