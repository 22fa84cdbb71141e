package computedomain

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/finalizer"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/membership"
)

// ControllerName names the controller, its event source and its field manager.
const ControllerName = "compute-domain-controller"

// blockedRetry is how soon a domain blocked by a foreign claim template is looked at again; the
// template is not ours, so no event of ours would tell when it is gone.
const blockedRetry = 10 * time.Second

// EventRecorder emits events.k8s.io events; controller-runtime's recorder satisfies it.
type EventRecorder interface {
	Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...interface{})
}

// Reconciler reconciles ComputeDomains.
type Reconciler struct {
	client    client.Client
	apiReader client.Reader
	recorder  EventRecorder
	channels  *ChannelAllocator
	clock     clock.PassiveClock
	metrics   *Metrics
	written   *writtenStatuses
	cfg       Config
}

// Option configures a Reconciler.
type Option func(*Reconciler)

// WithClock sets the clock (default: the real clock).
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// WithChannelAllocator sets the channel allocator (default: a new one for cfg.MaxChannels).
func WithChannelAllocator(a *ChannelAllocator) Option { return func(r *Reconciler) { r.channels = a } }

// NewReconciler returns a reconciler that writes through c (wrapped to count its writes in m), confirms
// cache misses through apiReader, and emits events through recorder.
func NewReconciler(c client.Client, apiReader client.Reader, recorder EventRecorder, m *Metrics, cfg Config, opts ...Option) (*Reconciler, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Reconciler{
		client:    m.instrument(c),
		apiReader: apiReader,
		recorder:  recorder,
		clock:     clock.RealClock{},
		metrics:   m,
		written:   newWrittenStatuses(),
		cfg:       cfg,
	}
	for _, o := range opts {
		o(r)
	}
	if r.channels == nil {
		r.channels = NewChannelAllocator(cfg.MaxChannels)
	}
	return r, nil
}

// CacheByObject is the manager cache configuration the reconciler expects: claim templates and
// DaemonSets only when this controller labeled them, ResourceClaims only when generated from a domain's
// workload claim template, DaemonSets and member records only in the operator namespace. It keeps the
// controller's memory independent of the cluster's other workloads.
func CacheByObject(operatorNamespace string) (map[client.Object]cache.ByObject, error) {
	managed := labels.SelectorFromSet(labels.Set{ManagedByLabelKey: ManagedByLabelValue})
	workload, err := labels.NewRequirement(v1beta1.WorkloadClaimLabelKey, selection.Exists, nil)
	if err != nil {
		return nil, fmt.Errorf("select workload claims: %w", err)
	}
	return map[client.Object]cache.ByObject{
		&resourcev1.ResourceClaimTemplate{}: {Label: managed},
		&resourcev1.ResourceClaim{}:         {Label: labels.NewSelector().Add(*workload)},
		&appsv1.DaemonSet{}:                 {Label: managed, Namespaces: map[string]cache.Config{operatorNamespace: {}}},
		&v1beta1.ComputeDomainMember{}:      {Namespaces: map[string]cache.Config{operatorNamespace: {}}},
	}, nil
}

// SetupWithManager registers the member index and the controller's watches. workers is the number of
// concurrent reconciles; the channel allocator serializes what must be serial.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, workers int) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1beta1.ComputeDomainMember{}, v1beta1.ComputeDomainMemberDomainUIDField,
		func(o client.Object) []string {
			return []string{o.(*v1beta1.ComputeDomainMember).Spec.DomainUID}
		}); err != nil {
		return fmt.Errorf("index ComputeDomainMembers by %s: %w", v1beta1.ComputeDomainMemberDomainUIDField, err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1beta1.ComputeDomain{}).
		Watches(&resourcev1.ResourceClaimTemplate{}, handler.EnqueueRequestsFromMapFunc(domainFromAnnotations)).
		Watches(&appsv1.DaemonSet{}, handler.EnqueueRequestsFromMapFunc(domainFromAnnotations)).
		Watches(&resourcev1.ResourceClaim{}, handler.EnqueueRequestsFromMapFunc(domainFromAnnotations)).
		Watches(&v1beta1.ComputeDomainMember{}, handler.EnqueueRequestsFromMapFunc(domainOfMember)).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// domainFromAnnotations maps an object the controller created (claim templates, DaemonSet) or a workload
// claim generated from its template (which copies the template's annotations) to the domain its
// annotations name.
func domainFromAnnotations(_ context.Context, o client.Object) []reconcile.Request {
	ns, name := o.GetAnnotations()[DomainNamespaceAnnotation], o.GetAnnotations()[DomainNameAnnotation]
	if ns == "" || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// domainOfMember maps a member record to its domain.
func domainOfMember(_ context.Context, o client.Object) []reconcile.Request {
	m, ok := o.(*v1beta1.ComputeDomainMember)
	if !ok || m.Spec.DomainNamespace == "" || m.Spec.DomainName == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: m.Spec.DomainNamespace, Name: m.Spec.DomainName}}}
}

// Reconcile brings one domain's objects and status in line with its spec and members.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cached := &v1beta1.ComputeDomain{}
	if err := r.client.Get(ctx, req.NamespacedName, cached); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone without our finalizer (or after it): nothing may stay allocated in its name.
			r.channels.ReleaseNamed(req.NamespacedName)
			r.written.forgetNamed(req.NamespacedName)
			r.metrics.forgetNamed(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get ComputeDomain %s: %w", req.NamespacedName, err)
	}
	// The cache may not have seen the controller's last status write yet; compute from that write.
	cd := r.written.current(cached)
	logger := klog.FromContext(ctx).WithValues("computeDomain", klog.KObj(cd), "domainUID", cd.UID)
	ctx = klog.NewContext(ctx, logger)

	if err := r.rebuildChannels(ctx); err != nil {
		return ctrl.Result{}, err
	}
	if !cd.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, cd)
	}
	if _, err := finalizer.Ensure(ctx, r.client, cd); err != nil {
		return ctrl.Result{}, err
	}

	var errs []error
	blocker, err := r.ensureWorkloadClaimTemplate(ctx, cd)
	errs = append(errs, err)
	errs = append(errs, r.ensureDaemonClaimTemplate(ctx, cd))
	claims, err := r.workloadClaims(ctx, cd)
	if err != nil {
		return ctrl.Result{}, err
	}
	nodes := WorkloadNodes(claims)
	r.metrics.observeWorkload(cd, len(nodes), r.clock.Now())
	errs = append(errs, r.placeDaemons(ctx, cd, nodes))

	members, err := r.members(ctx, cd)
	if err != nil {
		return ctrl.Result{}, err
	}
	channels, channelErrs := r.assignChannels(cd, members)
	status := membership.Compute(membership.Input{
		Domain:            cd,
		Members:           members,
		Channels:          channels,
		ChannelErrors:     channelErrs,
		Blocker:           blocker,
		Now:               metav1.NewTime(r.clock.Now()),
		MaxNodesPerClique: r.cfg.MaxNodesPerClique,
	})
	if err := r.writeStatus(ctx, cd, status); err != nil {
		return ctrl.Result{}, err
	}
	if blocker != nil {
		return ctrl.Result{RequeueAfter: blockedRetry}, utilerrors.NewAggregate(errs)
	}
	return ctrl.Result{}, utilerrors.NewAggregate(errs)
}

// rebuildChannels restores the channel allocator from every domain's status, once per process, before
// any channel is handed out.
func (r *Reconciler) rebuildChannels(ctx context.Context) error {
	conflicts, err := r.channels.RebuildOnce(func() ([]v1beta1.ComputeDomain, error) {
		var list v1beta1.ComputeDomainList
		if err := r.client.List(ctx, &list); err != nil {
			return nil, err
		}
		return list.Items, nil
	})
	for _, c := range conflicts {
		klog.FromContext(ctx).Info("Channel allocation in a status not restored", "reason", c.Error())
	}
	return err
}

// members lists the domain's member records through the field index.
func (r *Reconciler) members(ctx context.Context, cd *v1beta1.ComputeDomain) ([]v1beta1.ComputeDomainMember, error) {
	var list v1beta1.ComputeDomainMemberList
	if err := r.client.List(ctx, &list, client.InNamespace(r.cfg.OperatorNamespace),
		client.MatchingFields{v1beta1.ComputeDomainMemberDomainUIDField: string(cd.UID)}); err != nil {
		return nil, fmt.Errorf("list ComputeDomainMembers of %s: %w", klog.KObj(cd), err)
	}
	return list.Items, nil
}

// assignChannels makes sure the domain holds a channel in every clique its members are in.
func (r *Reconciler) assignChannels(cd *v1beta1.ComputeDomain, members []v1beta1.ComputeDomainMember) (map[string]int32, map[string]error) {
	errs := map[string]error{}
	for _, clique := range membership.Cliques(members) {
		if _, err := r.channels.Assign(RefOf(cd), clique); err != nil {
			errs[clique] = err
		}
	}
	return r.channels.Channels(cd.UID), errs
}

// writeStatus writes the status when it changed (one merge patch, no optimistic lock: the controller is
// the status's only writer), then records metrics and emits events for what changed.
func (r *Reconciler) writeStatus(ctx context.Context, cd *v1beta1.ComputeDomain, status v1beta1.ComputeDomainStatus) error {
	if equality.Semantic.DeepEqual(cd.Status, status) {
		r.metrics.observeDomain(cd, r.clock.Now())
		return nil
	}
	before := cd.DeepCopy()
	cd.Status = status
	if err := r.client.Status().Patch(ctx, cd, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("write status of ComputeDomain %s: %w", klog.KObj(cd), err)
	}
	r.written.remember(cd)
	klog.FromContext(ctx).V(2).Info("Wrote status", "status", status.Status, "readyNodes", status.ReadyNodes, "totalNodes", status.TotalNodes)
	r.metrics.observeDomain(cd, r.clock.Now())
	r.emitEvents(before, cd)
	return nil
}

// maxEventNote is the API server's limit on an event's note.
const maxEventNote = 1024

// emitEvents reports transitions of the Ready and Degraded conditions, with the condition's message (the
// Ready one names each clique's channel). One event per condition transition and no more: client-go's event
// recorder aggregates events that differ only in their note into a series, and a second one emitted while
// the first is still being created makes it create the event twice (an HTTP 409 from the API server), which
// per-clique channel events did.
func (r *Reconciler) emitEvents(before, after *v1beta1.ComputeDomain) {
	if r.recorder == nil {
		return
	}
	transition := func(t string) (*metav1.Condition, bool) {
		old := meta.FindStatusCondition(before.Status.Conditions, t)
		cur := meta.FindStatusCondition(after.Status.Conditions, t)
		if cur == nil {
			return nil, false
		}
		return cur, old == nil || old.Status != cur.Status
	}
	event := func(eventType string, c *metav1.Condition, prefix string) {
		r.recorder.Eventf(after, nil, eventType, c.Reason, "Reconcile", "%s", eventNote(prefix+c.Message))
	}
	if c, changed := transition(v1beta1.ComputeDomainConditionReady); changed {
		switch {
		case c.Status == metav1.ConditionTrue:
			event("Normal", c, "ComputeDomain is Ready: ")
		case meta.IsStatusConditionTrue(before.Status.Conditions, v1beta1.ComputeDomainConditionReady):
			event("Warning", c, "ComputeDomain is no longer Ready: ")
		}
	}
	if c, changed := transition(v1beta1.ComputeDomainConditionDegraded); changed {
		if c.Status == metav1.ConditionTrue {
			event("Warning", c, "ComputeDomain is degraded: ")
		} else if meta.IsStatusConditionTrue(before.Status.Conditions, v1beta1.ComputeDomainConditionDegraded) {
			event("Normal", c, "ComputeDomain recovered: ")
		}
	}
}

// eventNote cuts a note to the API server's limit (a domain of many cliques or lost nodes has a long
// condition message; the full one is in the status).
func eventNote(note string) string {
	if len(note) <= maxEventNote {
		return note
	}
	const more = " … (see the ComputeDomain's status)"
	cut := maxEventNote - len(more)
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut] + more
}

// finalize tears down a deleted domain.
func (r *Reconciler) finalize(ctx context.Context, cd *v1beta1.ComputeDomain) error {
	owned := []client.Object{
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: r.cfg.OperatorNamespace, Name: DaemonSetName(cd.UID)}},
		&resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: r.cfg.OperatorNamespace, Name: DaemonClaimTemplateName(cd.UID)}},
	}
	cleanup := finalizer.Cleanup{Client: r.client, Channels: r.channels, OperatorNamespace: r.cfg.OperatorNamespace}
	if err := cleanup.Run(ctx, cd, owned); err != nil {
		return err
	}
	r.metrics.forgetDomain(cd.UID)
	r.written.forget(cd.UID)
	return nil
}
