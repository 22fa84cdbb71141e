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

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/allocation"
)

// RacksOptions filter the racks view. Filters choose which cliques are shown; a shown clique is drawn whole,
// with the trays other holders hold, so its free room stays visible.
type RacksOptions struct {
	// Domain, when set, shows the cliques where the ComputeDomain of that name in DomainNamespace holds trays.
	Domain          string
	DomainNamespace string
	// Namespace, when set, shows the cliques where a holder of that namespace holds trays.
	Namespace string
	// Clique, when set, shows that clique alone.
	Clique string
}

// BuildRacks builds the racks view of s. A filter that names no domain or clique of s is an error naming the
// flag.
func BuildRacks(s *Snapshot, opts RacksOptions) (*Racks, error) {
	ix := newIndex(s)
	trays := ix.trays()

	if opts.Domain != "" {
		if _, ok := ix.domains[objKey(opts.DomainNamespace, opts.Domain)]; !ok {
			return nil, fmt.Errorf("--domain %s: no ComputeDomain %s in namespace %s", opts.Domain, opts.Domain, opts.DomainNamespace)
		}
	}
	byClique := map[string][]Tray{}
	for _, n := range s.Nodes {
		byClique[n.Labels[v1beta1.CliqueNodeLabelKey]] = append(byClique[n.Labels[v1beta1.CliqueNodeLabelKey]], trays[n.Name])
	}
	if opts.Clique != "" {
		if _, ok := byClique[opts.Clique]; !ok {
			known := slices.DeleteFunc(cliqueIDs(byClique), func(id string) bool { return id == "" })
			return nil, fmt.Errorf("--clique %s: no node carries the label %s=%s; cliques: %s",
				opts.Clique, v1beta1.CliqueNodeLabelKey, opts.Clique, strings.Join(known, ", "))
		}
	}

	r := &Racks{Cliques: []Clique{}, Holders: []Holder{}}
	held := map[holderID]int{}
	for _, id := range cliqueIDs(byClique) {
		c := Clique{ID: id, Trays: byClique[id]}
		if !opts.shows(c) {
			continue
		}
		slices.SortFunc(c.Trays, func(a, b Tray) int { return naturalCompare(a.Node, b.Node) })
		for _, t := range c.Trays {
			c.TotalTrays++
			if t.Free {
				c.FreeTrays++
			}
			for _, h := range t.Holders {
				held[h.id()]++
			}
		}
		r.Cliques = append(r.Cliques, c)
		r.FreeTrays += c.FreeTrays
		r.TotalTrays += c.TotalTrays
	}
	for id, n := range held {
		r.Holders = append(r.Holders, Holder{Kind: id.kind, Namespace: id.namespace, Name: id.name, Trays: n, Color: holderColor(id)})
	}
	slices.SortFunc(r.Holders, func(a, b Holder) int { return compareHolderIDs(a.id(), b.id()) })
	for i := range r.Holders {
		r.Holders[i].Key = holderKey(i)
	}
	return r, nil
}

// shows reports whether the clique passes the filters.
func (o RacksOptions) shows(c Clique) bool {
	if o.Clique != "" && c.ID != o.Clique {
		return false
	}
	if o.Domain == "" && o.Namespace == "" {
		return true
	}
	for _, t := range c.Trays {
		for _, h := range t.Holders {
			if o.Domain != "" && h.Kind == HolderComputeDomain && h.Namespace == o.DomainNamespace && h.Name == o.Domain {
				return true
			}
			if o.Domain == "" && h.Namespace == o.Namespace {
				return true
			}
		}
	}
	return false
}

// cliqueIDs are the cliques' IDs sorted, the nodes without a clique (empty ID) last.
func cliqueIDs(byClique map[string][]Tray) []string {
	ids := make([]string, 0, len(byClique))
	for id := range byClique {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		if (a == "") != (b == "") {
			return cmp.Compare(b, a)
		}
		return naturalCompare(a, b)
	})
	return ids
}

// holderID identifies a holder.
type holderID struct{ kind, namespace, name string }

func (h Holder) id() holderID     { return holderID{h.Kind, h.Namespace, h.Name} }
func (h TrayHolder) id() holderID { return holderID{h.Kind, h.Namespace, h.Name} }

// holderKindOrder puts domains first, then pods, then unreserved claims.
var holderKindOrder = map[string]int{HolderComputeDomain: 0, HolderPod: 1, HolderResourceClaim: 2}

func compareHolderIDs(a, b holderID) int {
	return cmp.Or(
		cmp.Compare(holderKindOrder[a.kind], holderKindOrder[b.kind]),
		cmp.Compare(a.namespace, b.namespace),
		cmp.Compare(a.name, b.name),
	)
}

// holderKey is the i-th cell label: A ... Z, AA, AB, ...
func holderKey(i int) string {
	key := ""
	for i++; i > 0; i = (i - 1) / 26 {
		key = string(rune('A'+(i-1)%26)) + key
	}
	return key
}

// trays builds every node's tray.
func (ix *index) trays() map[string]Tray {
	holders := ix.holdersByNode()
	out := make(map[string]Tray, len(ix.snap.Nodes))
	for i := range ix.snap.Nodes {
		n := &ix.snap.Nodes[i]
		t := Tray{Node: n.Name, Cordoned: n.Spec.Unschedulable, Taints: nodeTaints(n)}
		gpus := ix.gpus[n.Name]
		t.GPUs, t.UnhealthyGPUs, t.UnhealthyReasons = gpus.total, len(gpus.unhealthy), gpus.unhealthy
		t.IMEX, t.IMEXMessage = ix.imexState(n)
		for _, h := range holders[n.Name] {
			t.Holders = append(t.Holders, *h)
		}
		slices.SortFunc(t.Holders, func(a, b TrayHolder) int { return compareHolderIDs(a.id(), b.id()) })
		t.Free = len(t.Holders) == 0 && !t.Cordoned && len(t.Taints) == 0 && t.UnhealthyGPUs == 0 &&
			(t.IMEX == IMEXReady || t.IMEX == IMEXNone)
		out[n.Name] = t
	}
	return out
}

// nodeTaints are the node's NoSchedule and NoExecute taints, the cordon's own taint left out.
func nodeTaints(n *corev1.Node) []string {
	var out []string
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeUnschedulable || t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		out = append(out, taintString(t.Key, t.Value, string(t.Effect)))
	}
	return out
}

func taintString(key, value, effect string) string {
	if value == "" {
		return key + ":" + effect
	}
	return key + "=" + value + ":" + effect
}

// imexState is the node's IMEX daemon state and, when not ready, why.
func (ix *index) imexState(n *corev1.Node) (string, string) {
	if n.Labels[v1beta1.CliqueNodeLabelKey] == "" {
		return IMEXNone, ""
	}
	rec, ok := ix.imex[n.Name]
	switch {
	case !ok:
		return IMEXMissing, "no IMEXNode reports for the node"
	case rec.Status.Ready:
		return IMEXReady, ""
	}
	var why []string
	for _, c := range rec.Status.Conditions {
		if c.Status != "True" {
			why = append(why, fmt.Sprintf("%s %s: %s", c.Type, c.Reason, c.Message))
		}
	}
	return IMEXNotReady, strings.Join(why, "; ")
}

// holdersByNode finds who holds each node: the allocated GPU claims (held by their domain, else by the pods that
// reserved them, else by the claim itself), the domains' workload channel claims, and the nodes each domain's
// status lists.
func (ix *index) holdersByNode() map[string]map[holderID]*TrayHolder {
	out := map[string]map[holderID]*TrayHolder{}
	add := func(node string, id holderID, gpus int) {
		if out[node] == nil {
			out[node] = map[holderID]*TrayHolder{}
		}
		h := out[node][id]
		if h == nil {
			h = &TrayHolder{Kind: id.kind, Namespace: id.namespace, Name: id.name}
			out[node][id] = h
		}
		h.GPUs += gpus
	}
	for i := range ix.snap.ResourceClaims {
		c := &ix.snap.ResourceClaims[i]
		if c.Status.Allocation == nil {
			continue
		}
		domain, isDomainClaim := ix.claimDomain(c)
		gpus := ix.claimGPUsByNode(c)
		if !isDomainClaim && len(gpus) == 0 {
			continue
		}
		owners := ix.claimHolders(c, domain, isDomainClaim)
		for node, n := range gpus {
			for j, id := range owners {
				// The GPUs count once, for the first holder (a claim shared by pods of one domain is the domain's).
				if j > 0 {
					n = 0
				}
				add(node, id, n)
			}
		}
		if node, ok := allocation.Node(c); ok && isDomainClaim {
			add(node, domain, 0)
		}
	}
	for _, d := range ix.snap.ComputeDomains {
		for _, n := range d.Status.Nodes {
			add(n.Name, holderID{HolderComputeDomain, d.Namespace, d.Name}, 0)
		}
	}
	return out
}

// claimHolders are who holds an allocated claim: its domain, else the domains or pods that reserved it, else the
// claim itself.
func (ix *index) claimHolders(c *resourceapi.ResourceClaim, domain holderID, isDomainClaim bool) []holderID {
	if isDomainClaim {
		return []holderID{domain}
	}
	var out []holderID
	for _, ref := range c.Status.ReservedFor {
		if ref.Resource != "pods" {
			continue
		}
		id := holderID{HolderPod, c.Namespace, ref.Name}
		if d, ok := ix.podDomain(c.Namespace, ref.Name); ok {
			id = d
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		out = []holderID{{HolderResourceClaim, c.Namespace, c.Name}}
	}
	return out
}

// claimGPUsByNode counts the claim's allocated gpu.nvidia.com devices per node.
func (ix *index) claimGPUsByNode(c *resourceapi.ResourceClaim) map[string]int {
	out := map[string]int{}
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != v1beta1.GPUDriverName {
			continue
		}
		node, ok := ix.poolNode[poolKey{r.Driver, r.Pool}]
		if !ok {
			if node, ok = allocation.Node(c); !ok {
				continue
			}
		}
		out[node]++
	}
	return out
}
