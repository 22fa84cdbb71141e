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
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// Metrics are the controller's Prometheus metrics. They live in the registry passed to NewMetrics, never
// in a process-global one, so several controllers can run in one process.
//
//   - computedomain_formation_seconds: from the first reconcile that sees one of the domain's workload
//     claims allocated and reserved (its first pod bound to a node) to the status write that first sets
//     Ready=True, once per domain and controller process. A controller that restarts during a formation
//     does not observe that formation.
//   - computedomain_domains{condition,status}: domains by condition type and status, at scrape time.
//   - computedomain_clique_channels{clique}: IMEX channels the domains hold in each NVLink clique (one per
//     domain with a channel there, as their status last written says), at scrape time.
//   - computedomain_controller_api_writes_total{kind,verb}: writes this controller sent to the API server.
//   - computedomain_controller_api_conflicts_total{kind,verb}: those answered HTTP 409.
type Metrics struct {
	formation prometheus.Histogram
	writes    *prometheus.CounterVec
	conflicts *prometheus.CounterVec

	mu         sync.Mutex
	conditions map[types.UID]map[string]metav1.ConditionStatus
	// channelCliques are the cliques where each domain holds a channel.
	channelCliques map[types.UID][]string
	names          map[types.UID]types.NamespacedName
	formed         map[types.UID]bool
	// placed is when the domain's workload was first seen on a node.
	placed map[types.UID]time.Time
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		formation: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "computedomain_formation_seconds",
			Help:    "Seconds from a ComputeDomain's first workload pod bound to a node to its first Ready=True status.",
			Buckets: []float64{0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300, 600},
		}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "computedomain_controller_api_writes_total",
			Help: "API writes sent by the ComputeDomain controller, by object kind and verb.",
		}, []string{"kind", "verb"}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "computedomain_controller_api_conflicts_total",
			Help: "API writes of the ComputeDomain controller answered with HTTP 409, by object kind and verb.",
		}, []string{"kind", "verb"}),
		conditions:     map[types.UID]map[string]metav1.ConditionStatus{},
		channelCliques: map[types.UID][]string{},
		names:          map[types.UID]types.NamespacedName{},
		formed:         map[types.UID]bool{},
		placed:         map[types.UID]time.Time{},
	}
	for _, c := range []prometheus.Collector{m.formation, m.writes, m.conflicts, domainsCollector{m}} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register ComputeDomain controller metrics: %w", err)
		}
	}
	return m, nil
}

// observeWorkload records when the domain's workload first holds a node: the start of its formation.
func (m *Metrics) observeWorkload(cd *v1beta1.ComputeDomain, nodes int, now time.Time) {
	if nodes == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.placed[cd.UID]; !ok {
		m.placed[cd.UID] = now
	}
}

// observeDomain records a domain's conditions after its status was written, and its formation time the
// first time it is Ready.
func (m *Metrics) observeDomain(cd *v1beta1.ComputeDomain, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	conds := map[string]metav1.ConditionStatus{}
	for _, c := range cd.Status.Conditions {
		conds[c.Type] = c.Status
	}
	m.conditions[cd.UID] = conds
	var cliques []string
	for _, c := range cd.Status.Cliques {
		if c.Channel != nil && c.CliqueID != "" {
			cliques = append(cliques, c.CliqueID)
		}
	}
	m.channelCliques[cd.UID] = cliques
	m.names[cd.UID] = types.NamespacedName{Namespace: cd.Namespace, Name: cd.Name}
	start, placed := m.placed[cd.UID]
	if conds[v1beta1.ComputeDomainConditionReady] != metav1.ConditionTrue || m.formed[cd.UID] || !placed {
		return
	}
	m.formed[cd.UID] = true
	m.formation.Observe(now.Sub(start).Seconds())
}

// forgetDomain drops a deleted domain.
func (m *Metrics) forgetDomain(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forgetLocked(uid)
}

// forgetLocked drops everything kept of the domain uid; m.mu is held.
func (m *Metrics) forgetLocked(uid types.UID) {
	delete(m.conditions, uid)
	delete(m.channelCliques, uid)
	delete(m.names, uid)
	delete(m.formed, uid)
	delete(m.placed, uid)
}

// forgetNamed drops a domain that is gone without its finalizer, by name.
func (m *Metrics) forgetNamed(name types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid, n := range m.names {
		if n == name {
			m.forgetLocked(uid)
		}
	}
}

// domainsCollector reports computedomain_domains and computedomain_clique_channels from the statuses last
// written.
type domainsCollector struct{ m *Metrics }

var domainsDesc = prometheus.NewDesc("computedomain_domains",
	"ComputeDomains by condition type and status, as last written by the controller.", []string{"condition", "status"}, nil)

var cliqueChannelsDesc = prometheus.NewDesc("computedomain_clique_channels",
	"IMEX channels the ComputeDomains hold in each NVLink clique (one per domain with a channel there), as last written by the controller.", []string{"clique"}, nil)

func (c domainsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- domainsDesc
	ch <- cliqueChannelsDesc
}

func (c domainsCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	counts := map[[2]string]int{}
	for _, conds := range c.m.conditions {
		for t, s := range conds {
			counts[[2]string{t, string(s)}]++
		}
	}
	channels := map[string]int{}
	for _, cliques := range c.m.channelCliques {
		for _, clique := range cliques {
			channels[clique]++
		}
	}
	c.m.mu.Unlock()
	for _, clique := range slices.Sorted(maps.Keys(channels)) {
		ch <- prometheus.MustNewConstMetric(cliqueChannelsDesc, prometheus.GaugeValue, float64(channels[clique]), clique)
	}
	keys := make([][2]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+keys[i][1] < keys[j][0]+keys[j][1] })
	for _, k := range keys {
		ch <- prometheus.MustNewConstMetric(domainsDesc, prometheus.GaugeValue, float64(counts[k]), k[0], k[1])
	}
}

// countingClient counts the writes of the client it wraps.
type countingClient struct {
	client.Client
	m *Metrics
}

// instrument returns a client that counts its writes in m.
func (m *Metrics) instrument(c client.Client) client.Client { return countingClient{Client: c, m: m} }

func (c countingClient) count(obj runtime.Object, verb string, err error) error {
	kind := "unknown"
	if gvk, gerr := apiutil.GVKForObject(obj, c.Scheme()); gerr == nil {
		kind = gvk.Kind
	}
	c.m.writes.WithLabelValues(kind, verb).Inc()
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		c.m.conflicts.WithLabelValues(kind, verb).Inc()
	}
	return err
}

func (c countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return c.count(obj, "create", c.Client.Create(ctx, obj, opts...))
}

func (c countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.count(obj, "update", c.Client.Update(ctx, obj, opts...))
}

func (c countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.count(obj, "patch", c.Client.Patch(ctx, obj, patch, opts...))
}

func (c countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return c.count(obj, "delete", c.Client.Delete(ctx, obj, opts...))
}

func (c countingClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	return c.count(obj, "deletecollection", c.Client.DeleteAllOf(ctx, obj, opts...))
}

func (c countingClient) Status() client.SubResourceWriter {
	return countingStatusWriter{SubResourceWriter: c.Client.Status(), c: c}
}

type countingStatusWriter struct {
	client.SubResourceWriter
	c countingClient
}

func (w countingStatusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return w.c.count(obj, "update-status", w.SubResourceWriter.Update(ctx, obj, opts...))
}

func (w countingStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return w.c.count(obj, "patch-status", w.SubResourceWriter.Patch(ctx, obj, patch, opts...))
}
