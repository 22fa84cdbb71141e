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
	"sync"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/cliqueplacement"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/finalizer"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/status"
	"github.com/computedomain-operator/computedomain-operator/internal/sliceplan"
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
	client       client.Client
	apiReader    client.Reader
	recorder     EventRecorder
	channels     *ChannelAllocator
	clock        clock.PassiveClock
	metrics      *Metrics
	expectations *expectations
	cfg          Config
	cluster      Cluster
	// cliques counts each clique's nodes from the Node metadata events (set up by SetupWithManager).
	cliques *cliqueIndex
	// escapes finds the pods of a domain whose gang waits that were admitted without joining it.
	escapes *cliqueplacement.Escapes
}

// Cluster is what the controller learned about the cluster when it started.
type Cluster struct {
	// WorkloadAPI says the cluster served the Workload API's PodGroups (workloadapi.Served); without it the
	// controller makes no PodGroups.
	WorkloadAPI bool
	// Placements holds the clique placement fallback's verdicts (package cliqueplacement), when it runs: on a
	// cluster without the Workload API, with Config.CliquePlacement.
	Placements *cliqueplacement.Verdicts
	// CompositePodGroups says the cluster served CompositePodGroups (workloadapi.CompositeServed): a domain of
	// more than one slice is then a composite gang of slice PodGroups.
	CompositePodGroups bool
	// Pods reads the pods the webhook labeled with their domain (cliqueplacement.NewPodCache), for the domains'
	// slices; nil without the webhook's pod groups.
	Pods client.Reader
}

// NewReconciler returns a reconciler for cluster that writes through c (wrapped to count its writes in m),
// confirms cache misses through apiReader, and emits events through recorder.
func NewReconciler(c client.Client, apiReader client.Reader, recorder EventRecorder, m *Metrics, cfg Config, cluster Cluster) (*Reconciler, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Reconciler{
		client:       m.instrument(c),
		apiReader:    apiReader,
		recorder:     recorder,
		channels:     NewChannelAllocator(cfg.MaxChannels),
		clock:        clock.RealClock{},
		metrics:      m,
		expectations: newExpectations(),
		cfg:          cfg,
		cluster:      cluster,
		escapes:      cliqueplacement.NewEscapes(apiReader),
	}, nil
}

// scope is one reconcile of a live domain: the domain as the controller knows it, and what the phases
// observed, from which the deferred status patch computes the status.
type scope struct {
	domain *v1beta1.ComputeDomain
	// blocker is set by the claim template phase when a foreign template holds the workload template's name.
	blocker *status.Blocker
	// workloadNodes are the nodes the domain's workload claims are allocated on and reserved for a pod.
	workloadNodes []string
	// allocatedNodes are the nodes any of the domain's workload claims is allocated on, reserved or not: a
	// clique keeps the domain's channel while one of them is in it.
	allocatedNodes []string
	// unallocatedClaims counts the domain's workload claims not allocated yet: pods of the domain waiting to be
	// scheduled.
	unallocatedClaims int
	// nodesObserved says the IMEX phase looked up the domain's nodes; nodes, channels and channelErrors are
	// what it found.
	nodesObserved bool
	nodes         []status.Node
	channels      map[string]int32
	channelErrors map[string]error
	// placement is the PlacementGuaranteed condition the placement phase found (nil: it did not get that far).
	placement *status.Placement
	// plan is the domain's slice plan and slices what the placement phase found of each slice (nil: none).
	plan   *sliceplan.Plan
	slices []v1beta1.ComputeDomainSlice
	// retry, when not 0, is how soon a phase wants the domain looked at again without an event.
	retry time.Duration
}

// requeueAfter asks for the domain to be looked at again within d.
func (s *scope) requeueAfter(d time.Duration) {
	if s.retry == 0 || d < s.retry {
		s.retry = d
	}
}

// Reconcile brings one domain's objects and status in line with its spec and nodes: get, finalizer and claim
// template (written together for a new domain), the phases (workload, IMEX, placement), and one status patch,
// deferred so that it is computed and written whatever the phases returned. Their errors and the patch's are
// returned together.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, reterr error) {
	cached := &v1beta1.ComputeDomain{}
	if err := r.client.Get(ctx, req.NamespacedName, cached); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone without our finalizer (or after it): nothing may stay allocated in its name. Its
			// claim template is owned by it and goes with it.
			r.channels.ReleaseNamed(req.NamespacedName)
			r.expectations.forgetNamed(req.NamespacedName)
			r.metrics.forgetNamed(req.NamespacedName)
			r.escapes.Forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get ComputeDomain %s: %w", req.NamespacedName, err)
	}
	// The cache may not have seen the controller's last status write yet; compute from that write.
	cd := r.expectations.domain(cached)
	logger := klog.FromContext(ctx).WithValues("computeDomain", klog.KObj(cd), "domainUID", cd.UID)
	ctx = klog.NewContext(ctx, logger)

	if err := r.rebuildChannels(ctx); err != nil {
		return ctrl.Result{}, err
	}
	if !cd.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, cd)
	}
	s := &scope{domain: cd}
	templateErr, err := r.ensureFinalizerAndTemplate(ctx, s)
	if err != nil {
		return ctrl.Result{}, joinErrors(err, templateErr)
	}
	defer func() {
		var later *statusDeferred
		if err := r.patchStatus(ctx, s); errors.As(err, &later) {
			if reterr == nil && (result.RequeueAfter == 0 || later.after < result.RequeueAfter) {
				result = ctrl.Result{RequeueAfter: later.after}
			}
		} else if err != nil {
			// controller-runtime ignores a result returned with an error; the error's backoff retries.
			result, reterr = ctrl.Result{}, joinErrors(reterr, err)
		}
	}()
	if err := joinErrors(
		templateErr,
		r.observeWorkload(ctx, s),
		r.observeIMEX(ctx, s),
		r.reconcilePlacement(ctx, s),
	); err != nil {
		return ctrl.Result{}, err
	}
	if s.blocker != nil {
		s.requeueAfter(blockedRetry)
	}
	return ctrl.Result{RequeueAfter: s.retry}, nil
}

// ensureFinalizerAndTemplate adds the domain's finalizer and creates its workload claim template (a foreign
// template holding the name is left alone and blocks the domain: s.blocker). The finalizer's error is
// returned second: without the finalizer no channel may be handed out, so the pass ends there. A new domain,
// without the finalizer, gets both writes at once: its first pass waits for one API round trip instead of
// two. That is safe because the finalizer guards only the domain's channels (package finalizer): the
// template is owned by the domain, and garbage collected with it should the finalizer never be added.
func (r *Reconciler) ensureFinalizerAndTemplate(ctx context.Context, s *scope) (templateErr, finalizerErr error) {
	if controllerutil.ContainsFinalizer(s.domain, finalizer.Name) {
		s.blocker, templateErr = r.ensureWorkloadClaimTemplate(ctx, s.domain)
		return templateErr, nil
	}
	// The finalizer's patch rewrites the domain it is given from the API server's answer: the template
	// is built from a copy.
	domain := s.domain.DeepCopy()
	var blocker *status.Blocker
	var wg sync.WaitGroup
	wg.Go(func() { blocker, templateErr = r.ensureWorkloadClaimTemplate(ctx, domain) })
	finalizerErr = finalizer.Ensure(ctx, r.client, s.domain)
	wg.Wait()
	s.blocker = blocker
	return templateErr, finalizerErr
}

// joinErrors aggregates the errors that are not nil, flattening nested aggregates; nil when there are none.
func joinErrors(errs ...error) error {
	agg := utilerrors.NewAggregate(errs)
	if agg == nil {
		return nil
	}
	return utilerrors.Flatten(agg)
}

// observeWorkload finds the nodes the domain's workload claims are allocated on.
func (r *Reconciler) observeWorkload(ctx context.Context, s *scope) error {
	claims, err := r.workloadClaims(ctx, s.domain)
	if err != nil {
		return err
	}
	s.workloadNodes = WorkloadNodes(claims)
	s.allocatedNodes = allocatedNodes(claims)
	s.unallocatedClaims = 0
	for i := range claims {
		if claims[i].Status.Allocation == nil {
			s.unallocatedClaims++
		}
	}
	r.metrics.observeWorkload(s.domain, len(s.workloadNodes), r.clock.Now())
	return nil
}

// patchStatus computes the domain's status from what the phases observed and writes it. Without the
// nodes there is nothing to compute it from (a status computed without them would drop every node's
// index and every channel), so the status stays as it is and the returned error brings the next pass.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope) error {
	if !s.nodesObserved {
		return nil
	}
	st := status.Compute(status.Input{
		Domain:            s.domain,
		Nodes:             s.nodes,
		Channels:          s.channels,
		ChannelErrors:     s.channelErrors,
		Blocker:           s.blocker,
		Placement:         s.placement,
		Slices:            s.slices,
		Now:               metav1.NewTime(r.clock.Now()),
		MaxNodesPerClique: r.cfg.MaxNodesPerClique,
	})
	return r.writeStatus(ctx, s.domain, st)
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

// assignChannels makes sure the domain holds a channel in each of cliques.
func (r *Reconciler) assignChannels(cd *v1beta1.ComputeDomain, cliques []string) (map[string]int32, map[string]error) {
	errs := map[string]error{}
	for _, clique := range cliques {
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
	if wait := r.expectations.statusWriteWait(cd.UID, r.clock.Now(), r.cfg.StatusWriteInterval); wait > 0 {
		// Every node plugin and daemon watching the domain decodes every status write; while nodes join
		// by the hundred, one write per interval carries them all.
		return &statusDeferred{after: wait}
	}
	before := cd.DeepCopy()
	cd.Status = status
	if err := r.client.Status().Patch(ctx, cd, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("write status of ComputeDomain %s: %w", klog.KObj(cd), err)
	}
	r.expectations.expectStatus(cd, r.clock.Now())
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

// finalize tears down a deleted domain. While workload claims still hold its channel it waits: the claims'
// deletion requeues the domain, and heldChannelRetry bounds the wait should an event be missed.
func (r *Reconciler) finalize(ctx context.Context, cd *v1beta1.ComputeDomain) (ctrl.Result, error) {
	cleanup := finalizer.Cleanup{Client: r.client, Channels: r.channels}
	var held *finalizer.ChannelsHeldError
	if err := cleanup.Run(ctx, cd); errors.As(err, &held) {
		klog.FromContext(ctx).V(2).Info("Deleted domain keeps its channel until its workload claims are released", "claims", held.Claims)
		return ctrl.Result{RequeueAfter: heldChannelRetry}, nil
	} else if err != nil {
		return ctrl.Result{}, err
	}
	r.metrics.forgetDomain(cd.UID)
	r.expectations.forget(cd.UID)
	return ctrl.Result{}, nil
}

// heldChannelRetry is how often a deleted domain whose workload claims still hold its channel is looked at
// again, in case the claims' deletion events are missed.
const heldChannelRetry = 30 * time.Second

// statusDeferred says a status write waits until the domain's last one is StatusWriteInterval old.
type statusDeferred struct{ after time.Duration }

func (d *statusDeferred) Error() string { return fmt.Sprintf("status write deferred by %s", d.after) }
