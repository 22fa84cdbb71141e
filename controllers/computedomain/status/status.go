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

package status

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/imex"
)

// maxNamed is how many nodes a condition message names before it summarizes the rest.
const maxNamed = 10

// Blocker is a reason the domain cannot become Ready that lies outside its membership, such as a claim
// template name that belongs to another object.
type Blocker struct {
	Reason  string
	Message string
}

// Placement is how the domain's workload is placed, as the controller's placement phase found it.
type Placement struct {
	// Status, Reason and Message make the PlacementGuaranteed condition.
	Status  metav1.ConditionStatus
	Reason  string
	Message string
	// Unschedulable, when set, is why the scheduler cannot place the domain's gang now; while no workload
	// pod runs it is the Ready condition's message (GangUnschedulable).
	Unschedulable string
}

// Node is one node the domain's workload claims are allocated on, with what the IMEX objects say of it.
type Node struct {
	// Name is the node's name.
	Name string
	// IMEX is the node's IMEXNode, the report of its long-lived IMEX daemon, when the controller trusts it
	// (imexclique.TrustNodes); nil when no trusted daemon reports for the node.
	IMEX *v1beta1.IMEXNode
	// Index is the node's index in its clique's IMEX ensemble, when the clique's IMEXClique lists the node at
	// the IMEXNode's address; nil while it does not.
	Index *int32
	// NoFabric: the node has no multi-node NVLink fabric (no clique label), so no IMEX daemon runs there and
	// none is needed; its claims get no channel.
	NoFabric bool
}

// Input is everything the status of one domain is computed from.
type Input struct {
	// Domain is the domain as last read; its status is the previous status.
	Domain *v1beta1.ComputeDomain
	// Nodes are the nodes the domain's workload claims are allocated on, one entry per node.
	Nodes []Node
	// Channels is the domain's IMEX channel per clique, as the allocator holds them.
	Channels map[string]int32
	// ChannelErrors is the allocation error per clique that got no channel.
	ChannelErrors map[string]error
	// Blocker, when set, keeps the domain not Ready.
	Blocker *Blocker
	// Placement, when set, gives the PlacementGuaranteed condition; unset, the previous one stays.
	Placement *Placement
	// Slices are the domain's slices as the placement phase found them (their channels are filled in from
	// Channels); nil keeps the previous ones (the phase did not get that far).
	Slices []v1beta1.ComputeDomainSlice
	// Now is the time of this computation.
	Now metav1.Time
	// MaxNodesPerClique caps each clique's ensemble; 0 means v1beta1.NVL72CliqueSize.
	MaxNodesPerClique int
}

// Cliques returns the distinct NVLink cliques of the nodes whose IMEX daemon reports, sorted (nodes without
// a multi-node fabric get no channel).
func Cliques(nodes []Node) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range nodes {
		if n.IMEX == nil {
			continue
		}
		if c := n.IMEX.Spec.CliqueID; c != "" && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// Compute returns the domain's new status. It keeps what must stay stable (node indices, the time a node
// became ready, the conditions' transition times) from the previous status. It runs in three passes: the
// nodes (each one's index and readiness), the cliques (each one's counts and channel), and the conditions,
// which read what the first two found.
func Compute(in Input) v1beta1.ComputeDomainStatus {
	cd := in.Domain
	now := metav1.NewTime(in.Now.Rfc3339Copy().Time) // the precision the API keeps, so a re-read compares equal
	limit := in.MaxNodesPerClique
	if limit == 0 {
		limit = v1beta1.NVL72CliqueSize
	}
	members, fixed := membersOf(in.Nodes)
	byClique := map[string][]member{}
	for _, m := range members {
		byClique[m.clique] = append(byClique[m.clique], m)
	}

	nodes := computeNodes(cd.Status.Nodes, fixed, byClique, limit, now)
	cliques := computeCliques(byClique, nodes.nodes, in.Channels, in.ChannelErrors)

	total := int32(len(members))
	status := v1beta1.ComputeDomainStatus{
		Nodes:              nodes.nodes,
		Cliques:            cliques.cliques,
		ReadyNodes:         nodes.ready,
		TotalNodes:         max(total, cd.Spec.NumNodes),
		Conditions:         append([]metav1.Condition(nil), cd.Status.Conditions...),
		ObservedGeneration: cd.Generation,
	}
	status.Slices = computeSlices(cd.Status.Slices, in.Slices, in.Channels)
	setConditions(&status, conditionsInput{
		cd: cd, now: now, blocker: in.Blocker, placement: in.Placement, limit: limit, total: total, nodes: nodes, cliques: cliques,
	})
	return status
}

// computeSlices is the slices of the status: found, each with the domain's channel in its clique, or the
// previous ones when the placement phase found none.
func computeSlices(previous, found []v1beta1.ComputeDomainSlice, channels map[string]int32) []v1beta1.ComputeDomainSlice {
	if found == nil {
		return previous
	}
	out := make([]v1beta1.ComputeDomainSlice, len(found))
	for i, s := range found {
		s.Channel = nil
		if ch, ok := channels[s.CliqueID]; ok && s.CliqueID != "" {
			s.Channel = ptr.To(ch)
		}
		out[i] = s
	}
	return out
}

// nodesResult is what the nodes pass found.
type nodesResult struct {
	// nodes are the status entries of the members that hold an index, sorted by name; ready counts those
	// whose daemon is ready.
	nodes []v1beta1.ComputeDomainNode
	ready int32
	// notReady are the members holding an index whose daemon is not ready, lost those of them that were
	// ready before; both sorted by node.
	notReady []member
	lost     []member
	// noFabric are the nodes without a multi-node NVLink fabric (the empty clique), sorted.
	noFabric []string
	// overflow maps a full clique to its nodes that got no index, sorted.
	overflow map[string][]string
}

// computeNodes is the nodes pass: each clique's members get their indices (their ensemble's, else kept from
// the previous status where they had one in the same clique, at most limit per clique except in the empty
// one), and each member holding an index becomes a status node.
func computeNodes(previous []v1beta1.ComputeDomainNode, fixed map[string]int32, byClique map[string][]member, limit int, now metav1.Time) nodesResult {
	prevNodes := map[string]v1beta1.ComputeDomainNode{}
	for _, n := range previous {
		prevNodes[n.Name] = n
	}
	out := nodesResult{overflow: map[string][]string{}}
	for clique, ms := range byClique {
		names := make([]string, 0, len(ms))
		prevIndices := map[string]int32{}
		for _, m := range ms {
			names = append(names, m.name)
			if idx, ok := fixed[m.name]; ok {
				prevIndices[m.name] = idx
			} else if p, ok := prevNodes[m.name]; ok && p.CliqueID == clique {
				prevIndices[m.name] = p.Index
			}
		}
		cliqueLimit := limit
		if clique == "" {
			cliqueLimit = 0
		}
		indices, over := imex.AssignIndices(names, prevIndices, cliqueLimit)
		if len(over) > 0 {
			out.overflow[clique] = over
		}
		for _, m := range ms {
			idx, ok := indices[m.name]
			if !ok {
				continue
			}
			node := statusNode(m, clique, idx, prevNodes, now)
			if m.ready {
				out.ready++
			} else {
				out.notReady = append(out.notReady, m)
				if node.LastReadyTime != nil {
					out.lost = append(out.lost, m)
				}
			}
			if clique == "" {
				out.noFabric = append(out.noFabric, m.name)
			}
			out.nodes = append(out.nodes, node)
		}
	}
	sort.Slice(out.nodes, func(i, j int) bool { return out.nodes[i].Name < out.nodes[j].Name })
	sortMembers(out.notReady)
	sortMembers(out.lost)
	sort.Strings(out.noFabric)
	return out
}

// statusNode is the status entry of member m holding index idx in clique. Its lastReadyTime carries over
// from the previous entry in the same clique and is set to now when the daemon turns ready.
func statusNode(m member, clique string, idx int32, prevNodes map[string]v1beta1.ComputeDomainNode, now metav1.Time) v1beta1.ComputeDomainNode {
	node := v1beta1.ComputeDomainNode{
		Name:      m.name,
		IPAddress: m.ip,
		CliqueID:  clique,
		Index:     idx,
		Status:    v1beta1.ComputeDomainStatusNotReady,
	}
	prev, hadPrev := prevNodes[m.name]
	if hadPrev && prev.CliqueID == clique {
		node.LastReadyTime = prev.LastReadyTime
	}
	if m.ready {
		node.Status = v1beta1.ComputeDomainStatusReady
		if !hadPrev || prev.Status != v1beta1.ComputeDomainStatusReady || node.LastReadyTime == nil {
			node.LastReadyTime = ptr.To(now)
		}
	}
	return node
}

// cliquesResult is what the cliques pass found.
type cliquesResult struct {
	// cliques are the status entries of every clique with members or a channel, sorted by ID.
	cliques []v1beta1.ComputeDomainClique
	// pending are the cliques with members and no channel yet; exhausted says, per clique whose channel
	// allocation failed, why. Both sorted.
	pending   []string
	exhausted []string
}

// computeCliques is the cliques pass: each clique's node counts (the ready ones among nodes) and channel.
// The empty clique, of nodes without a multi-node fabric, gets no channel.
func computeCliques(byClique map[string][]member, nodes []v1beta1.ComputeDomainNode, channels map[string]int32, channelErrs map[string]error) cliquesResult {
	ready := map[string]int32{}
	for _, n := range nodes {
		if n.Status == v1beta1.ComputeDomainStatusReady {
			ready[n.CliqueID]++
		}
	}
	ids := map[string]bool{}
	for c := range byClique {
		ids[c] = true
	}
	for c := range channels {
		ids[c] = true
	}
	var out cliquesResult
	for c := range ids {
		entry := v1beta1.ComputeDomainClique{
			CliqueID:   c,
			ReadyNodes: ready[c],
			TotalNodes: int32(len(byClique[c])),
		}
		if ch, ok := channels[c]; ok && c != "" {
			entry.Channel = ptr.To(ch)
		} else if c != "" && len(byClique[c]) > 0 {
			if channelErrs[c] != nil {
				out.exhausted = append(out.exhausted, fmt.Sprintf("clique %s: %v", c, channelErrs[c]))
			} else {
				out.pending = append(out.pending, c)
			}
		}
		out.cliques = append(out.cliques, entry)
	}
	sort.Slice(out.cliques, func(i, j int) bool { return out.cliques[i].CliqueID < out.cliques[j].CliqueID })
	sort.Strings(out.pending)
	sort.Strings(out.exhausted)
	return out
}

// conditionsInput is what the conditions pass reads.
type conditionsInput struct {
	cd        *v1beta1.ComputeDomain
	now       metav1.Time
	blocker   *Blocker
	placement *Placement
	limit     int
	// total is the number of members.
	total   int32
	nodes   nodesResult
	cliques cliquesResult
}

// setConditions is the conditions pass: DaemonsReady, Degraded, PlacementGuaranteed (when the placement
// phase found it) and Ready, and status.status from Ready.
func setConditions(status *v1beta1.ComputeDomainStatus, in conditionsInput) {
	generation := in.cd.Generation
	setCondition(status, generation, in.now, daemonsReady(in.total, in.nodes.ready, in.nodes.notReady))
	setCondition(status, generation, in.now, degraded(in.nodes.lost))
	if p := in.placement; p != nil {
		setCondition(status, generation, in.now, metav1.Condition{
			Type: v1beta1.ComputeDomainConditionPlacementGuaranteed, Status: p.Status, Reason: p.Reason, Message: p.Message,
		})
	}
	ready := readyCondition(in)
	setCondition(status, generation, in.now, ready)
	status.Status = v1beta1.ComputeDomainStatusNotReady
	if ready.Status == metav1.ConditionTrue {
		status.Status = v1beta1.ComputeDomainStatusReady
	}
}

func setCondition(s *v1beta1.ComputeDomainStatus, generation int64, now metav1.Time, c metav1.Condition) {
	c.ObservedGeneration = generation
	c.LastTransitionTime = now // used only when the condition's status changes
	// Messages quote IMEXNodes, which the nodes' daemons write: a status with a message past the API's
	// limit would be refused whole, so the cap applies to every condition.
	c.Message = v1beta1.CapMessage(c.Message, v1beta1.MaxConditionMessageBytes)
	meta.SetStatusCondition(&s.Conditions, c)
}

func daemonsReady(total, ready int32, notReady []member) metav1.Condition {
	c := metav1.Condition{Type: v1beta1.ComputeDomainConditionDaemonsReady}
	switch {
	case total == 0:
		c.Status, c.Reason = metav1.ConditionFalse, v1beta1.ComputeDomainReasonNoWorkload
		c.Message = "no node runs a workload pod of this domain yet"
	case len(notReady) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, v1beta1.ComputeDomainReasonDaemonsNotReady
		c.Message = fmt.Sprintf("%d of %d IMEX daemons ready; not ready: %s", ready, ready+int32(len(notReady)), causes(notReady))
	default:
		c.Status, c.Reason = metav1.ConditionTrue, v1beta1.ComputeDomainReasonAllNodesReady
		c.Message = fmt.Sprintf("%d of %d IMEX daemons ready", ready, ready)
	}
	return c
}

func degraded(lost []member) metav1.Condition {
	c := metav1.Condition{Type: v1beta1.ComputeDomainConditionDegraded}
	if len(lost) == 0 {
		c.Status, c.Reason = metav1.ConditionFalse, v1beta1.ComputeDomainReasonHealthy
		c.Message = "no node that was ready has lost its IMEX daemon or its peers"
		return c
	}
	c.Status, c.Reason = metav1.ConditionTrue, v1beta1.ComputeDomainReasonPeersLost
	for _, m := range lost {
		if m.daemonLost {
			c.Reason = v1beta1.ComputeDomainReasonDaemonLost
			break
		}
	}
	c.Message = "nodes that were ready and are not: " + causes(lost)
	return c
}

func readyCondition(in conditionsInput) metav1.Condition {
	c := metav1.Condition{Type: v1beta1.ComputeDomainConditionReady, Status: metav1.ConditionFalse}
	switch {
	case in.blocker != nil:
		c.Reason, c.Message = in.blocker.Reason, in.blocker.Message
	case len(in.cliques.exhausted) > 0:
		c.Reason = v1beta1.ComputeDomainReasonChannelsExhausted
		c.Message = strings.Join(in.cliques.exhausted, "; ")
	case len(in.nodes.overflow) > 0:
		c.Reason = v1beta1.ComputeDomainReasonCliqueFull
		var parts []string
		for _, clique := range sortedKeys(in.nodes.overflow) {
			parts = append(parts, fmt.Sprintf("clique %s holds %d nodes, the most one IMEX ensemble can have; not joined: %s",
				clique, in.limit, names(in.nodes.overflow[clique])))
		}
		c.Message = strings.Join(parts, "; ")
	case in.total == 0 && in.placement != nil && in.placement.Unschedulable != "":
		c.Reason = v1beta1.ComputeDomainReasonGangUnschedulable
		c.Message = in.placement.Unschedulable
	case in.total == 0:
		c.Reason = v1beta1.ComputeDomainReasonNoWorkload
		c.Message = "waiting for the domain's workload: no node runs a workload pod of this domain yet"
	case len(in.nodes.notReady) > 0:
		c.Reason = v1beta1.ComputeDomainReasonDaemonsNotReady
		c.Message = fmt.Sprintf("%d of %d nodes ready; waiting for the IMEX daemons of %s", in.nodes.ready, in.total, nodeNames(in.nodes.notReady))
		if len(in.nodes.lost) > 0 {
			c.Message += " (see the Degraded condition)"
		}
	case in.nodes.ready < in.cd.Spec.NumNodes:
		c.Reason = v1beta1.ComputeDomainReasonWaitingForNodes
		c.Message = fmt.Sprintf("%d of %d nodes (spec.numNodes) ready", in.nodes.ready, in.cd.Spec.NumNodes)
	case len(in.cliques.pending) > 0:
		c.Reason = v1beta1.ComputeDomainReasonChannelPending
		c.Message = "no IMEX channel allocated yet for clique " + strings.Join(in.cliques.pending, ", ")
	case len(in.nodes.noFabric) == int(in.total):
		c.Status, c.Reason = metav1.ConditionTrue, v1beta1.ComputeDomainReasonNoFabric
		c.Message = fmt.Sprintf("nodes %s have no multi-node NVLink fabric; their workload claims get no IMEX channel", names(in.nodes.noFabric))
	default:
		c.Status, c.Reason = metav1.ConditionTrue, v1beta1.ComputeDomainReasonAllNodesReady
		var parts []string
		for _, cl := range in.cliques.cliques {
			if cl.Channel != nil && cl.TotalNodes > 0 {
				parts = append(parts, fmt.Sprintf("%s: channel %d, %d nodes", cl.CliqueID, *cl.Channel, cl.TotalNodes))
			}
		}
		c.Message = fmt.Sprintf("%d nodes ready; one IMEX ensemble per clique: %s", in.nodes.ready, strings.Join(parts, "; "))
		if len(in.nodes.noFabric) > 0 {
			c.Message += fmt.Sprintf("; nodes without a multi-node NVLink fabric get no channel: %s", names(in.nodes.noFabric))
		}
	}
	return c
}

func sortMembers(ms []member) {
	sort.Slice(ms, func(i, j int) bool { return ms[i].name < ms[j].name })
}

// causes names each member (up to maxNamed) with its cause.
func causes(ms []member) string {
	var parts []string
	for i, m := range ms {
		if i == maxNamed {
			parts = append(parts, fmt.Sprintf("and %d more", len(ms)-maxNamed))
			break
		}
		parts = append(parts, fmt.Sprintf("node %s (%s)", m.name, m.cause))
	}
	return strings.Join(parts, "; ")
}

func nodeNames(ms []member) string {
	ns := make([]string, len(ms))
	for i, m := range ms {
		ns[i] = m.name
	}
	return names(ns)
}

// names joins up to maxNamed names and summarizes the rest.
func names(ns []string) string {
	if len(ns) <= maxNamed {
		return strings.Join(ns, ", ")
	}
	return strings.Join(ns[:maxNamed], ", ") + fmt.Sprintf(" and %d more", len(ns)-maxNamed)
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
