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

package topologyview

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// maxEvents is how many of the domain's most recent events describe shows.
const maxEvents = 10

// Description is one ComputeDomain as describe shows it.
type Description struct {
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	NumNodes   int32  `json:"numNodes"`
	SliceSize  int32  `json:"sliceSize,omitempty"`
	Status     string `json:"status"`
	ReadyNodes int32  `json:"readyNodes"`
	TotalNodes int32  `json:"totalNodes"`
	// Blocker says in one sentence what keeps the domain from Ready, from its conditions.
	Blocker    string               `json:"blocker"`
	Cliques    []DescribedClique    `json:"cliques"`
	Pods       []DescribedPod       `json:"pods"`
	Conditions []DescribedCondition `json:"conditions"`
	// Events are the domain's most recent events, oldest first.
	Events []DescribedEvent `json:"events"`
}

// DescribedClique is one clique of the domain: its channel, slices and nodes. The clique with the empty ID holds
// the slices not placed yet.
type DescribedClique struct {
	ID         string           `json:"id"`
	Channel    *int32           `json:"channel,omitempty"`
	ReadyNodes int32            `json:"readyNodes"`
	TotalNodes int32            `json:"totalNodes"`
	Slices     []DescribedSlice `json:"slices,omitempty"`
	Nodes      []DescribedNode  `json:"nodes,omitempty"`
}

// DescribedSlice is one slice of the domain's ranks.
type DescribedSlice struct {
	Index     int32  `json:"index"`
	FirstRank int32  `json:"firstRank"`
	Size      int32  `json:"size"`
	BoundPods int32  `json:"boundPods"`
	Channel   *int32 `json:"channel,omitempty"`
	PodGroup  string `json:"podGroup,omitempty"`
}

// DescribedNode is one node of the domain with its IMEX identity and its daemon's state.
type DescribedNode struct {
	Name      string `json:"name"`
	IPAddress string `json:"ipAddress,omitempty"`
	Index     int32  `json:"index"`
	Status    string `json:"status"`
	// IMEXMessage says why the node's IMEX daemon is not ready.
	IMEXMessage string `json:"imexMessage,omitempty"`
}

// DescribedPod is a workload pod of the domain.
type DescribedPod struct {
	Name   string `json:"name"`
	Node   string `json:"node,omitempty"`
	Clique string `json:"clique,omitempty"`
	Phase  string `json:"phase"`
}

// DescribedCondition is one condition of the domain.
type DescribedCondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

// DescribedEvent is one event of the domain.
type DescribedEvent struct {
	LastSeen time.Time `json:"lastSeen"`
	Type     string    `json:"type"`
	Reason   string    `json:"reason"`
	Count    int32     `json:"count,omitempty"`
	Message  string    `json:"message"`
}

// Describe builds the description of the ComputeDomain name in namespace; a domain s does not hold is an error
// naming the argument.
func Describe(s *Snapshot, namespace, name string) (*Description, error) {
	ix := newIndex(s)
	d, ok := ix.domains[objKey(namespace, name)]
	if !ok {
		return nil, fmt.Errorf("DOMAIN %s: no ComputeDomain %s in namespace %s (choose the namespace with -n)", name, name, namespace)
	}
	out := &Description{
		Namespace:  d.Namespace,
		Name:       d.Name,
		NumNodes:   d.Spec.NumNodes,
		SliceSize:  d.Spec.SliceSize,
		Status:     string(d.Status.Status),
		ReadyNodes: d.Status.ReadyNodes,
		TotalNodes: d.Status.TotalNodes,
		Blocker:    blocker(d),
		Cliques:    describeCliques(ix, d),
		Pods:       describePods(ix, d),
		Conditions: []DescribedCondition{},
		Events:     describeEvents(s.Events, d),
	}
	for _, c := range d.Status.Conditions {
		out.Conditions = append(out.Conditions, DescribedCondition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out, nil
}

// describeCliques are the domain's cliques (status.cliques, and the cliques its slices and nodes name), sorted by
// ID with the slices not placed yet last.
func describeCliques(ix *index, d *v1beta1.ComputeDomain) []DescribedClique {
	byID := map[string]*DescribedClique{}
	get := func(id string) *DescribedClique {
		if byID[id] == nil {
			byID[id] = &DescribedClique{ID: id}
		}
		return byID[id]
	}
	for _, c := range d.Status.Cliques {
		dc := get(c.CliqueID)
		dc.Channel, dc.ReadyNodes, dc.TotalNodes = c.Channel, c.ReadyNodes, c.TotalNodes
	}
	for _, s := range d.Status.Slices {
		dc := get(s.CliqueID)
		dc.Slices = append(dc.Slices, DescribedSlice{Index: s.Index, FirstRank: s.FirstRank, Size: s.Size, BoundPods: s.BoundPods, Channel: s.Channel, PodGroup: s.PodGroup})
	}
	for _, n := range d.Status.Nodes {
		dn := DescribedNode{Name: n.Name, IPAddress: n.IPAddress, Index: n.Index, Status: string(n.Status)}
		if n.Status != v1beta1.ComputeDomainStatusReady {
			if node := ix.node(n.Name); node != nil {
				_, dn.IMEXMessage = ix.imexState(node)
			}
		}
		dc := get(n.CliqueID)
		dc.Nodes = append(dc.Nodes, dn)
	}
	out := make([]DescribedClique, 0, len(byID))
	for _, dc := range byID {
		slices.SortFunc(dc.Nodes, func(a, b DescribedNode) int {
			return cmp.Or(cmp.Compare(a.Index, b.Index), naturalCompare(a.Name, b.Name))
		})
		slices.SortFunc(dc.Slices, func(a, b DescribedSlice) int { return cmp.Compare(a.Index, b.Index) })
		out = append(out, *dc)
	}
	slices.SortFunc(out, func(a, b DescribedClique) int {
		if (a.ID == "") != (b.ID == "") {
			return cmp.Compare(b.ID, a.ID)
		}
		return naturalCompare(a.ID, b.ID)
	})
	return out
}

// node is the Node named name, nil when s has none.
func (ix *index) node(name string) *corev1.Node {
	return ix.nodes[name]
}

// describePods are the pods that join the domain, by name.
func describePods(ix *index, d *v1beta1.ComputeDomain) []DescribedPod {
	out := []DescribedPod{}
	want := holderID{HolderComputeDomain, d.Namespace, d.Name}
	for _, p := range ix.snap.Pods {
		if p.Namespace != d.Namespace {
			continue
		}
		if id, ok := ix.podDomain(p.Namespace, p.Name); !ok || id != want {
			continue
		}
		dp := DescribedPod{Name: p.Name, Node: p.Spec.NodeName, Phase: string(p.Status.Phase)}
		if n := ix.node(p.Spec.NodeName); n != nil {
			dp.Clique = n.Labels[v1beta1.CliqueNodeLabelKey]
		}
		out = append(out, dp)
	}
	slices.SortFunc(out, func(a, b DescribedPod) int { return naturalCompare(a.Name, b.Name) })
	return out
}

// describeEvents are the domain's most recent events, oldest first.
func describeEvents(events []corev1.Event, d *v1beta1.ComputeDomain) []DescribedEvent {
	out := []DescribedEvent{}
	for _, e := range events {
		o := e.InvolvedObject
		if o.Kind != "ComputeDomain" || o.Namespace != d.Namespace || o.Name != d.Name || (o.UID != "" && d.UID != "" && o.UID != d.UID) {
			continue
		}
		out = append(out, DescribedEvent{LastSeen: eventTime(e).UTC(), Type: e.Type, Reason: e.Reason, Count: e.Count, Message: e.Message})
	}
	slices.SortStableFunc(out, func(a, b DescribedEvent) int { return a.LastSeen.Compare(b.LastSeen) })
	if len(out) > maxEvents {
		out = out[len(out)-maxEvents:]
	}
	return out
}

// eventTime is when the event was last seen: its last timestamp, else its event time, else its creation.
func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// blockingPlacementReasons are the PlacementGuaranteed reasons that keep the domain's pods from being placed
// (the others only say how placement works on this cluster).
var blockingPlacementReasons = []string{
	v1beta1.ComputeDomainReasonExceedsClique,
	v1beta1.ComputeDomainReasonNoCliqueFree,
	v1beta1.ComputeDomainReasonWaitingForPods,
	v1beta1.ComputeDomainReasonPodsNotHeld,
	v1beta1.ComputeDomainReasonPodGroupConflict,
	v1beta1.ComputeDomainReasonPodGroupChanged,
}

// blocker says in one sentence what keeps the domain from Ready, from its conditions: a placement that cannot
// be made comes first (nothing else can happen before it), then the Ready condition's own reason.
func blocker(d *v1beta1.ComputeDomain) string {
	ready := meta.FindStatusCondition(d.Status.Conditions, v1beta1.ComputeDomainConditionReady)
	if ready == nil {
		return "Not known yet: the domain has no Ready condition, so the controller has not reconciled it (is the controller running?)."
	}
	if ready.Status == metav1.ConditionTrue {
		if deg := meta.FindStatusCondition(d.Status.Conditions, v1beta1.ComputeDomainConditionDegraded); deg != nil && deg.Status == metav1.ConditionTrue {
			return fmt.Sprintf("Nothing blocks it, but it is degraded (Degraded %s): %s.", deg.Reason, sentence(deg.Message))
		}
		return fmt.Sprintf("Nothing blocks it: it is Ready (%s).", ready.Reason)
	}
	if p := meta.FindStatusCondition(d.Status.Conditions, v1beta1.ComputeDomainConditionPlacementGuaranteed); p != nil &&
		p.Status == metav1.ConditionFalse && slices.Contains(blockingPlacementReasons, p.Reason) {
		return fmt.Sprintf("Blocked on placement (PlacementGuaranteed %s): %s.", p.Reason, sentence(p.Message))
	}
	return fmt.Sprintf("Blocked (Ready %s): %s.", ready.Reason, sentence(ready.Message))
}

// sentence is a condition message without its trailing full stop, or a placeholder when empty.
func sentence(msg string) string {
	msg = strings.TrimRight(strings.TrimSpace(msg), ".")
	if msg == "" {
		return "no message"
	}
	return msg
}
