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

	"k8s.io/klog/v2"

	"github.com/computedomain-operator/computedomain-operator/internal/usage"
)

// Endpoint is one node's plugin serving its usage ledger.
type Endpoint struct {
	Node string
	// URL is the plugin's ledger endpoint (http://<pod IP>:<port>/usage).
	URL string
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

type intervalID struct {
	ledger string
	key    usage.IntervalKey
}

// ledgerState is what was pulled of one ledger.
type ledgerState struct {
	node   string
	cursor uint64
	now    time.Time
	starts map[usage.IntervalKey]usage.Record
	ends   map[usage.IntervalKey]time.Time
}

// nodeCursor is where the pull of a node's ledger stands.
type nodeCursor struct {
	ledger string
}

// joined is what the API server said of an interval when it was first seen.
type joined struct {
	team string
	pods []string
}

// Meter pulls the node ledgers and answers with intervals. It holds only
// what it pulled: its figures are a function of the ledgers.
type Meter struct {
	discover Discoverer
	fetch    Fetcher
	join     Joiner

	mu      sync.Mutex
	ledgers map[string]*ledgerState
	nodes   map[string]nodeCursor
	joined  map[intervalID]joined
	errors  map[string]int
	pulled  map[string]time.Time
}

// NewMeter returns a Meter that has pulled nothing yet.
func NewMeter(d Discoverer, f Fetcher, j Joiner) *Meter {
	return &Meter{discover: d, fetch: f, join: j,
		ledgers: map[string]*ledgerState{}, nodes: map[string]nodeCursor{}, joined: map[intervalID]joined{},
		errors: map[string]int{}, pulled: map[string]time.Time{}}
}

// Pull reads every plugin's new ledger records. A node that cannot be read
// is retried at the next pull; what it recorded meanwhile is not lost.
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
	return errors.Join(errs...)
}

func (m *Meter) pullNode(ctx context.Context, ep Endpoint) error {
	m.mu.Lock()
	cur := m.nodes[ep.Node]
	var after uint64
	if st := m.ledgers[cur.ledger]; st != nil {
		after = st.cursor
	}
	m.mu.Unlock()
	for {
		page, err := m.fetch.Fetch(ctx, ep.URL, after)
		if err != nil {
			return err
		}
		if page.Ledger != cur.ledger && after > 0 {
			// Another ledger at this node (its file was recreated): read
			// the new one from its beginning, keep what the old one said.
			klog.FromContext(ctx).Info("Node has a new usage ledger, reading it from the start", "node", ep.Node, "ledger", page.Ledger, "previous", cur.ledger)
			cur, after = nodeCursor{ledger: page.Ledger}, 0
			if st := m.ledgers[page.Ledger]; st != nil {
				after = st.cursor
			}
			continue
		}
		cur.ledger = page.Ledger
		m.addPage(ctx, ep.Node, page)
		if len(page.Records) > 0 {
			after = page.Records[len(page.Records)-1].Seq
		}
		if !page.More {
			break
		}
	}
	m.mu.Lock()
	m.nodes[ep.Node] = cur
	m.mu.Unlock()
	return nil
}

func (m *Meter) addPage(ctx context.Context, node string, page usage.Page) {
	// Join new intervals before taking the lock: the API calls may be slow.
	m.mu.Lock()
	var fresh []usage.Record
	for _, r := range page.Records {
		if _, seen := m.joined[intervalID{page.Ledger, usage.IntervalKey{ClaimUID: r.ClaimUID, Start: r.Start.UTC()}}]; r.Kind == usage.KindStart && !seen {
			fresh = append(fresh, r)
		}
	}
	m.mu.Unlock()
	found := map[intervalID]joined{}
	for _, r := range fresh {
		var j joined
		var err error
		if j.team, err = m.join.Team(ctx, r.Namespace); err != nil {
			klog.FromContext(ctx).Error(err, "Reading the team of a namespace failed; billing it to no team", "namespace", r.Namespace)
		}
		if j.pods, err = m.join.Pods(ctx, r.Namespace, r.Name); err != nil {
			klog.FromContext(ctx).V(2).Info("Reading the pods of a claim failed", "claim", klog.KRef(r.Namespace, r.Name), "err", err.Error())
		}
		found[intervalID{page.Ledger, usage.IntervalKey{ClaimUID: r.ClaimUID, Start: r.Start.UTC()}}] = j
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	maps.Copy(m.joined, found)
	st := m.ledgers[page.Ledger]
	if st == nil {
		st = &ledgerState{node: node, starts: map[usage.IntervalKey]usage.Record{}, ends: map[usage.IntervalKey]time.Time{}}
		m.ledgers[page.Ledger] = st
	}
	for _, r := range page.Records {
		if r.Seq <= st.cursor {
			continue // already have it
		}
		k := usage.IntervalKey{ClaimUID: r.ClaimUID, Start: r.Start.UTC()}
		switch r.Kind {
		case usage.KindStart:
			st.starts[k] = r
		case usage.KindEnd:
			st.ends[k] = r.Time
		}
		st.cursor = r.Seq
	}
	if page.Now.After(st.now) {
		st.now = page.Now
	}
	m.pulled[node] = page.Now
}

// Intervals are all device intervals pulled so far; open ones end at their
// node's time of the last pull.
func (m *Meter) Intervals() []Interval {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Interval
	for _, id := range slices.Sorted(maps.Keys(m.ledgers)) {
		st := m.ledgers[id]
		for k, r := range st.starts {
			end, closed := st.ends[k]
			if !closed {
				end = st.now
			}
			if end.Before(r.Start) {
				end = r.Start
			}
			j := m.joined[intervalID{id, k}]
			for _, d := range r.Devices {
				out = append(out, Interval{Ledger: id, Node: st.node, ClaimUID: r.ClaimUID, Namespace: r.Namespace, Claim: r.Name,
					Team: j.team, Pods: j.pods, Device: d, Start: r.Start.UTC(), End: end.UTC(), Open: !closed})
			}
		}
	}
	slices.SortFunc(out, func(a, b Interval) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		if c := cmp.Compare(a.ClaimUID, b.ClaimUID); c != 0 {
			return c
		}
		return cmp.Compare(a.Device.Name, b.Device.Name)
	})
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
