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
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/computedomain-operator/computedomain-operator/internal/usage"
)

// What the meter does not believe a node, as event reasons and metric labels.
const (
	// ReasonForeignLedger: a node served a ledger that is not its own (an
	// ID bound to another node, a ledger whose header names another node,
	// or a plugin answering as another node). None of the page is billed.
	ReasonForeignLedger = "ForeignUsageLedger"
	// ReasonIntervalRefused is the event of a refused interval; its
	// metric reason is one of the three below.
	ReasonIntervalRefused = "UsageIntervalRefused"
	// ReasonUnknownClaim: no claim of that UID exists, or existed while the
	// meter watched.
	ReasonUnknownClaim = "UnknownClaim"
	// ReasonClaimMismatch: the claim of that UID has another namespace or
	// name than the ledger says.
	ReasonClaimMismatch = "ClaimMismatch"
	// ReasonNotAllocatedOnNode: the claim was never allocated a device the
	// interval names on the node that served it.
	ReasonNotAllocatedOnNode = "NotAllocatedOnNode"
	// ReasonLedgerQuarantined: the node's plugin moved a ledger file aside
	// it could not read whole.
	ReasonLedgerQuarantined = "UsageLedgerQuarantined"
)

// ClaimFacts is what the API server says of a claim.
type ClaimFacts struct {
	UID             types.UID
	Namespace, Name string
	Created         time.Time
	// Devices are every device the claim was seen allocated, as
	// "<pool>/<device>" (a GPU plugin's pool is its node).
	Devices []string
}

// Claims answers for claims now and, for those deleted while it watched,
// before their deletion.
type Claims interface {
	// Claim is the claim of that UID (found false when none such exists
	// or was seen).
	Claim(ctx context.Context, namespace, name string, uid types.UID) (ClaimFacts, bool, error)
	// WatchingSince is since when every claim that existed was seen (zero:
	// not watching, nothing can be refused as unknown).
	WatchingSince() time.Time
}

// Recorder raises a warning about a node on its plugin pod.
type Recorder interface {
	Warn(ctx context.Context, pod PodRef, reason, message string)
}

type verdictKind int

const (
	// pending: not judged yet (new, or the API server could not be asked).
	pending verdictKind = iota
	// verified against the claim.
	verified
	// unverified: billed on the node's word, the claim being gone before
	// the meter could have seen it.
	unverified
	// refused: not billed.
	refused
)

// verdict is what the meter decided of an interval when it first judged it,
// with the join of then.
type verdict struct {
	kind    verdictKind
	team    string
	pods    []string
	created time.Time
}

// Refusal is one node's refusals of one reason.
type Refusal struct{ Node, Reason string }

type refusals struct {
	ledgers, intervals map[Refusal]int
	seen               map[string]bool
}

func newRefusals() refusals {
	return refusals{ledgers: map[Refusal]int{}, intervals: map[Refusal]int{}, seen: map[string]bool{}}
}

// refuseForeign refuses a page of a ledger that is not the node's own, once
// counted and raised per node, ledger and reason.
func (m *Meter) refuseForeign(ctx context.Context, ep Endpoint, page usage.Page) bool {
	var why string
	switch {
	case page.Node != "" && page.Node != ep.Node:
		why = fmt.Sprintf("the plugin on node %s answers as node %s", ep.Node, page.Node)
	case page.LedgerNode != "" && page.LedgerNode != ep.Node:
		why = fmt.Sprintf("ledger %s was created by node %s", page.Ledger, page.LedgerNode)
	case m.bound[page.Ledger] != "" && m.bound[page.Ledger] != ep.Node:
		why = fmt.Sprintf("ledger %s is node %s's", page.Ledger, m.bound[page.Ledger])
	default:
		return false
	}
	key := ep.Node + "/" + page.Ledger
	if !m.refused.seen[key] {
		m.refused.seen[key] = true
		m.refused.ledgers[Refusal{ep.Node, ReasonForeignLedger}]++
		klog.FromContext(ctx).Error(nil, "Refused a usage ledger served by a node it does not belong to", "node", ep.Node, "ledger", page.Ledger, "why", why)
	}
	m.warnOnceLocked(ctx, "foreign/"+key, ep.Pod, ReasonForeignLedger,
		fmt.Sprintf("Refused usage ledger %s from node %s: %s; none of its records are billed", page.Ledger, ep.Node, why))
	return true
}

func (m *Meter) warnOnceLocked(ctx context.Context, key string, pod PodRef, reason, message string) {
	if m.events == nil || m.warned[key] {
		return
	}
	m.warned[key] = true
	m.events.Warn(ctx, pod, reason, message)
}

// judgePending decides every interval not judged yet: its claim must exist
// (or have existed while the meter watched) in the ledger's namespace under
// the ledger's name, allocated the interval's devices on the node that
// served it. A claim gone before the meter could have seen it (the interval
// came with the meter's first pull of its ledger and started before the
// meter watched) is billed unverified. The team and pods are joined then.
func (m *Meter) judgePending(ctx context.Context) {
	type job struct {
		id   intervalID
		seen startSeen
		pod  PodRef
	}
	m.mu.Lock()
	var jobs []job
	for ref, st := range m.ledgers {
		for k, seen := range st.starts {
			id := intervalID{ref, k}
			if m.verdicts[id].kind == pending {
				jobs = append(jobs, job{id, seen, st.pod})
			}
		}
	}
	m.mu.Unlock()
	slices.SortFunc(jobs, func(a, b job) int { return a.seen.rec.Start.Compare(b.seen.rec.Start) })
	logger := klog.FromContext(ctx)
	for _, j := range jobs {
		r := j.seen.rec
		v, reason, why, err := m.judge(ctx, j.id.ledger.node, j.seen)
		if err != nil {
			logger.Error(err, "Checking the claim of a usage interval failed; retrying at the next pull", "claim", klog.KRef(r.Namespace, r.Name), "claimUID", r.ClaimUID)
			continue
		}
		if v.kind != refused {
			if v.team, err = m.join.Team(ctx, r.Namespace); err != nil {
				logger.Error(err, "Reading the team of a namespace failed; billing it to no team", "namespace", r.Namespace)
			}
			if v.pods, err = m.join.Pods(ctx, r.Namespace, r.Name); err != nil {
				logger.V(2).Info("Reading the pods of a claim failed", "claim", klog.KRef(r.Namespace, r.Name), "err", err.Error())
			}
		}
		m.mu.Lock()
		m.verdicts[j.id] = v
		if v.kind == refused {
			m.refused.intervals[Refusal{j.id.ledger.node, reason}]++
			logger.Error(nil, "Refused a usage interval", "node", j.id.ledger.node, "ledger", j.id.ledger.id, "claim", klog.KRef(r.Namespace, r.Name), "claimUID", r.ClaimUID, "reason", reason, "why", why)
			m.warnOnceLocked(ctx, fmt.Sprintf("interval/%v", j.id), j.pod, ReasonIntervalRefused,
				fmt.Sprintf("Refused the usage of claim %s/%s (UID %s) from %s in ledger %s: %s (%s); not billed",
					r.Namespace, r.Name, r.ClaimUID, r.Start.UTC().Format(time.RFC3339), j.id.ledger.id, why, reason))
		}
		m.mu.Unlock()
	}
}

func (m *Meter) judge(ctx context.Context, node string, seen startSeen) (verdict, string, string, error) {
	r := seen.rec
	if m.claims == nil {
		return verdict{kind: unverified}, "", "", nil
	}
	facts, found, err := m.claims.Claim(ctx, r.Namespace, r.Name, types.UID(r.ClaimUID))
	if err != nil {
		return verdict{}, "", "", err
	}
	// Before the watch, a claim could have been deleted, or deallocated
	// and allocated elsewhere, without the meter seeing it.
	since := m.claims.WatchingSince()
	unseeable := since.IsZero() || (seen.catchUp && r.Start.Before(since))
	if !found {
		if unseeable {
			return verdict{kind: unverified}, "", "", nil
		}
		return verdict{kind: refused}, ReasonUnknownClaim, "no such claim exists or existed while the meter watched", nil
	}
	if facts.Namespace != r.Namespace || facts.Name != r.Name {
		return verdict{kind: refused}, ReasonClaimMismatch, fmt.Sprintf("the claim of that UID is %s/%s", facts.Namespace, facts.Name), nil
	}
	for _, d := range r.Devices {
		if !slices.Contains(facts.Devices, node+"/"+d.Name) {
			if unseeable {
				return verdict{kind: unverified, created: facts.Created.UTC()}, "", "", nil
			}
			return verdict{kind: refused}, ReasonNotAllocatedOnNode, fmt.Sprintf("device %s of node %s was never allocated to it", d.Name, node), nil
		}
	}
	return verdict{kind: verified, created: facts.Created.UTC()}, "", "", nil
}

// Health is what the meter did not take on a node's word.
type Health struct {
	// RefusedLedgers and RefusedIntervals count refusals per node and
	// reason (a ledger once per node and ledger ID, an interval once).
	RefusedLedgers, RefusedIntervals map[Refusal]int
	// Unverified are the billed intervals per node whose claim could not
	// be checked (gone before the meter watched).
	Unverified map[string]int
	// ClockBounded are the intervals per node the meter's clock or the
	// claim's creation cut by more than a second.
	ClockBounded map[string]int
	// Quarantined are the ledger files each node's plugin moved aside.
	Quarantined map[string]int
}

// Health reports the refusals and doubts so far.
func (m *Meter) Health() Health {
	_, bounded := m.intervals()
	m.mu.Lock()
	defer m.mu.Unlock()
	h := Health{RefusedLedgers: maps.Clone(m.refused.ledgers), RefusedIntervals: maps.Clone(m.refused.intervals),
		Unverified: map[string]int{}, ClockBounded: bounded, Quarantined: map[string]int{}}
	for id, v := range m.verdicts {
		if v.kind == unverified {
			h.Unverified[id.ledger.node]++
		}
	}
	for ref, st := range m.ledgers {
		if m.current[ref.node] == ref.id {
			h.Quarantined[ref.node] = len(st.quarantined)
		}
	}
	return h
}
