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

package metering

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/computedomain-operator/computedomain-operator/internal/usage"
)

// Endpoint is one node's plugin serving its usage ledger.
type Endpoint struct {
	// Node is the node the plugin pod runs on (the API server's word, not
	// the plugin's): its ledgers are bound to it.
	Node string
	// Pod is the plugin pod, where the meter's events about the node go.
	Pod PodRef
	// URL is the plugin's ledger endpoint (http://<pod IP>:<port>/usage).
	URL string
}

// PodRef names a pod.
type PodRef struct {
	Namespace, Name string
	UID             types.UID
}

// Discoverer lists the plugins to pull from.
type Discoverer interface {
	Endpoints(ctx context.Context) ([]Endpoint, error)
}

// Fetcher reads one page of a ledger.
type Fetcher interface {
	Fetch(ctx context.Context, url string, after uint64) (usage.Page, error)
}

// Joiner answers the API server's part of the join.
type Joiner interface {
	// Team is the namespace's team ("" when it has none or is gone).
	Team(ctx context.Context, namespace string) (string, error)
	// Pods are the pods the claim is reserved for (nil when it is gone).
	Pods(ctx context.Context, namespace, name string) ([]string, error)
}

// ledgerRef is one ledger as served by one node: two nodes serving the same
// ledger ID never share what the meter pulled.
type ledgerRef struct{ node, id string }

type intervalID struct {
	ledger ledgerRef
	key    usage.IntervalKey
}

// startSeen is a start record and when the meter first saw it.
type startSeen struct {
	rec usage.Record
	// seenAt is the meter's time of the pull that brought it.
	seenAt time.Time
	// catchUp: it came with the meter's first pull of its ledger (written
	// before the meter read the ledger, maybe before the meter ran).
	catchUp bool
}

// endSeen is an end, bounded by the meter's time of the pull that saw it.
type endSeen struct {
	at      time.Time
	bounded time.Duration // how much the bound cut off
}

// ledgerState is what was pulled of one ledger.
type ledgerState struct {
	pod    PodRef
	cursor uint64
	// nodeNow is the latest node time a page said; pulledAt the meter's
	// time of the last pull: an open interval lasts until the earlier.
	nodeNow, pulledAt time.Time
	pulledOnce        bool
	// superseded: the node serves another ledger now (its file was
	// recreated); its open intervals end at its last pull.
	superseded  bool
	starts      map[usage.IntervalKey]startSeen
	ends        map[usage.IntervalKey]endSeen
	quarantined []usage.Quarantine
}

// Option configures a Meter.
type Option func(*Meter)

// WithClaims checks every interval's claim against the API server (see
// trust.go); without it no interval is verified.
func WithClaims(c Claims) Option { return func(m *Meter) { m.claims = c } }

// WithEvents raises the meter's warnings as events on the plugin pods.
func WithEvents(r Recorder) Option { return func(m *Meter) { m.events = r } }

// WithClock sets the meter's own clock (default: the real one), which bounds
// every interval.
func WithClock(c clock.PassiveClock) Option { return func(m *Meter) { m.clock = c } }

// Meter pulls the node ledgers and answers with intervals. It holds only
// what it pulled: its figures are a function of the ledgers and of what the
// API server says of their claims.
type Meter struct {
	discover Discoverer
	fetch    Fetcher
	join     Joiner
	claims   Claims
	events   Recorder
	clock    clock.PassiveClock

	mu      sync.Mutex
	ledgers map[ledgerRef]*ledgerState
	// current is the ledger ID each node serves now; bound the node each
	// ledger ID belongs to (the first that served it).
	current  map[string]string
	bound    map[string]string
	verdicts map[intervalID]verdict
	errors   map[string]int
	pulled   map[string]time.Time
	refused  refusals
	warned   map[string]bool
}

// NewMeter returns a Meter that has pulled nothing yet.
func NewMeter(d Discoverer, f Fetcher, j Joiner, opts ...Option) *Meter {
	m := &Meter{discover: d, fetch: f, join: j, clock: clock.RealClock{},
		ledgers: map[ledgerRef]*ledgerState{}, current: map[string]string{}, bound: map[string]string{},
		verdicts: map[intervalID]verdict{}, errors: map[string]int{}, pulled: map[string]time.Time{},
		refused: newRefusals(), warned: map[string]bool{}}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Pull reads every plugin's new ledger records, then checks the claims of
// the intervals it has not judged yet. A node that cannot be read is retried
// at the next pull; what it recorded meanwhile is not lost.
func (m *Meter) Pull(ctx context.Context) error {
	endpoints, err := m.discover.Endpoints(ctx)
	if err != nil {
		return fmt.Errorf("discover plugins: %w", err)
	}
	var errs []error
	for _, ep := range endpoints {
		if err := m.pullNode(ctx, ep); err != nil {
			m.mu.Lock()
			m.errors[ep.Node]++
			m.mu.Unlock()
			errs = append(errs, fmt.Errorf("node %s: %w", ep.Node, err))
		}
	}
	m.judgePending(ctx)
	return errors.Join(errs...)
}

func (m *Meter) pullNode(ctx context.Context, ep Endpoint) error {
	m.mu.Lock()
	cur := m.current[ep.Node]
	var after uint64
	if st := m.ledgers[ledgerRef{ep.Node, cur}]; st != nil {
		after = st.cursor
	}
	m.mu.Unlock()
	var st *ledgerState
	for {
		page, err := m.fetch.Fetch(ctx, ep.URL, after)
		if err != nil {
			return err
		}
		// The meter's time after the answer: every record of the page was
		// written before it, whatever the node's clock says.
		now := m.clock.Now().UTC()
		m.mu.Lock()
		if m.refuseForeign(ctx, ep, page) {
			m.mu.Unlock()
			return nil
		}
		if page.Ledger != cur {
			if old := m.ledgers[ledgerRef{ep.Node, cur}]; old != nil {
				// Another ledger at this node (its file was recreated):
				// read the new one from its beginning, keep what the old
				// one said up to its last pull.
				klog.FromContext(ctx).Info("Node has a new usage ledger, reading it from the start", "node", ep.Node, "ledger", page.Ledger, "previous", cur)
				old.superseded = true
			}
			cur = page.Ledger
			var next uint64
			if known := m.ledgers[ledgerRef{ep.Node, cur}]; known != nil {
				next = known.cursor
			}
			if next != after {
				after = next
				m.mu.Unlock()
				continue
			}
		}
		st = m.addPageLocked(ctx, ep, page, now)
		m.mu.Unlock()
		if len(page.Records) > 0 {
			after = page.Records[len(page.Records)-1].Seq
		}
		if !page.More {
			break
		}
	}
	m.mu.Lock()
	m.current[ep.Node] = cur
	if st != nil {
		st.pulledOnce = true
	}
	m.mu.Unlock()
	return nil
}

func (m *Meter) addPageLocked(ctx context.Context, ep Endpoint, page usage.Page, now time.Time) *ledgerState {
	ref := ledgerRef{ep.Node, page.Ledger}
	m.bound[page.Ledger] = ep.Node
	st := m.ledgers[ref]
	if st == nil {
		st = &ledgerState{starts: map[usage.IntervalKey]startSeen{}, ends: map[usage.IntervalKey]endSeen{}}
		m.ledgers[ref] = st
	}
	st.pod, st.superseded = ep.Pod, false
	for _, r := range page.Records {
		if r.Seq <= st.cursor {
			continue // already have it
		}
		k := usage.IntervalKey{ClaimUID: r.ClaimUID, Start: r.Start.UTC()}
		switch r.Kind {
		case usage.KindStart:
			if _, ok := st.starts[k]; !ok {
				st.starts[k] = startSeen{rec: r, seenAt: now, catchUp: !st.pulledOnce}
			}
		case usage.KindEnd:
			e := endSeen{at: r.Time.UTC()}
			if e.at.After(now) {
				e.bounded, e.at = e.at.Sub(now), now
			}
			st.ends[k] = e
		}
		st.cursor = r.Seq
	}
	if page.Now.After(st.nodeNow) {
		st.nodeNow = page.Now.UTC()
	}
	st.pulledAt = now
	st.quarantined = page.Quarantined
	for _, q := range page.Quarantined {
		m.warnOnceLocked(ctx, ep.Node+"/quarantine/"+q.File, ep.Pod, ReasonLedgerQuarantined,
			fmt.Sprintf("The GPU plugin moved its usage ledger aside as %s (%s) and went on with what could be read; what could not is not billed", q.File, q.Reason))
	}
	m.pulled[ep.Node] = page.Now
	return st
}

// Intervals are all billed device intervals pulled so far (refused and not
// yet judged ones left out), each claim's use of a device once: intervals of
// one claim and device that overlap (the same interval in an old and a
// recreated ledger) are merged. Open ones end at the last pull.
func (m *Meter) Intervals() []Interval {
	out, _ := m.intervals()
	return out
}

// intervals also counts per node the intervals the meter's clock bounded.
func (m *Meter) intervals() ([]Interval, map[string]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var raw []Interval
	bounded := map[string]int{}
	refs := slices.SortedFunc(maps.Keys(m.ledgers), func(a, b ledgerRef) int {
		return cmp.Or(cmp.Compare(a.node, b.node), cmp.Compare(a.id, b.id))
	})
	for _, ref := range refs {
		st := m.ledgers[ref]
		for k, seen := range st.starts {
			v := m.verdicts[intervalID{ref, k}]
			if v.kind == pending || v.kind == refused {
				continue
			}
			start, end, open, cut := st.bounds(k, seen, v)
			if cut > clockTolerance {
				bounded[ref.node]++
			}
			r := seen.rec
			for _, d := range r.Devices {
				raw = append(raw, Interval{Ledger: ref.id, Node: ref.node, ClaimUID: r.ClaimUID, Namespace: r.Namespace, Claim: r.Name,
					Team: v.team, Pods: v.pods, Device: d, Start: start, End: end, Open: open, Verified: v.kind == verified})
			}
		}
	}
	out := mergeOverlaps(raw)
	slices.SortFunc(out, func(a, b Interval) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		if c := cmp.Compare(a.ClaimUID, b.ClaimUID); c != 0 {
			return c
		}
		return cmp.Compare(a.Device.Name, b.Device.Name)
	})
	return out, bounded
}

// clockTolerance is the skew between a node's clock and the meter's that is
// not worth reporting.
const clockTolerance = time.Second

// bounds are an interval's start and end as billed: the node's times, bounded
// by the meter's own clock (no start after the pull that saw it, no end after
// the pull that saw it, an open interval no later than the last pull) and by
// the claim's creation. cut is how much the bounds took off.
func (st *ledgerState) bounds(k usage.IntervalKey, seen startSeen, v verdict) (start, end time.Time, open bool, cut time.Duration) {
	start = seen.rec.Start.UTC()
	if !v.created.IsZero() && start.Before(v.created) {
		cut += v.created.Sub(start)
		start = v.created
	}
	if start.After(seen.seenAt) {
		cut += start.Sub(seen.seenAt)
		start = seen.seenAt
	}
	e, closed := st.ends[k]
	if closed {
		end = e.at
		cut += e.bounded
	} else {
		end = st.nodeNow
		if end.After(st.pulledAt) {
			cut += end.Sub(st.pulledAt)
			end = st.pulledAt
		}
	}
	if end.Before(start) {
		end = start
	}
	return start, end, !closed && !st.superseded, cut
}

// mergeOverlaps bills each claim's use of a device once: intervals of the
// same claim, namespace and device that overlap or touch become one.
func mergeOverlaps(raw []Interval) []Interval {
	type key struct{ claim, namespace, device string }
	slices.SortStableFunc(raw, func(a, b Interval) int {
		return cmp.Or(cmp.Compare(a.ClaimUID, b.ClaimUID), cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Device.Name, b.Device.Name), a.Start.Compare(b.Start))
	})
	var out []Interval
	for _, iv := range raw {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if (key{last.ClaimUID, last.Namespace, last.Device.Name} == key{iv.ClaimUID, iv.Namespace, iv.Device.Name}) && !iv.Start.After(last.End) {
				switch {
				case iv.End.After(last.End):
					last.End, last.Open = iv.End, iv.Open
				case iv.End.Equal(last.End):
					last.Open = last.Open || iv.Open
				}
				last.Verified = last.Verified || iv.Verified
				continue
			}
		}
		out = append(out, iv)
	}
	return out
}

// NodeStatus is how the pulls of one node went.
type NodeStatus struct {
	Node     string
	LastPull time.Time
	Errors   int
}

// Nodes reports every node the meter tried to pull.
func (m *Meter) Nodes() []NodeStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := map[string]bool{}
	for n := range m.pulled {
		names[n] = true
	}
	for n := range m.errors {
		names[n] = true
	}
	var out []NodeStatus
	for _, n := range slices.Sorted(maps.Keys(names)) {
		out = append(out, NodeStatus{Node: n, LastPull: m.pulled[n], Errors: m.errors[n]})
	}
	return out
}
