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

package cliqueplacement

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/allocation"
	"github.com/computedomain-operator/computedomain-operator/internal/sliceplan"
)

// TopologyKey is the node label all pods of a domain share one value of: the NVLink clique.
const TopologyKey = v1beta1.CliqueNodeLabelKey

// Capacity is the free nodes of each NVLink clique: its labeled nodes less those with an allocated GPU and
// those that the slices of domains released into the clique are heading for.
type Capacity map[string]int

// domainKey names a managed domain as its pods do: their namespace and their PlacementDomainLabelKey value.
type domainKey struct{ namespace, value string }

// managedDomains is the slice plan of each ComputeDomain the fallback places (those with spec.numNodes and a
// plan for a clique of perClique nodes), by the key its pods carry.
func managedDomains(domains []v1beta1.ComputeDomain, perClique int) map[domainKey]sliceplan.Plan {
	managed := map[domainKey]sliceplan.Plan{}
	for i := range domains {
		cd := &domains[i]
		if cd.Spec.NumNodes == 0 {
			continue
		}
		// A domain without a plan is refused (ExceedsClique): its pods stay held and take nothing.
		if plan, err := sliceplan.ForDomain(cd, perClique); err == nil {
			managed[domainKey{cd.Namespace, v1beta1.PlacementDomainLabelValue(cd.Name)}] = plan
		}
	}
	return managed
}

// headed is what one domain's slice placed in one clique still takes there.
type headed struct {
	// size is the slice's size; started counts its pods bound (their nodes are busy through their claims) or
	// finished (their nodes are free again, and a Job does not run them again); unbound counts its released pods
	// that are not bound yet.
	size, started, unbound int
}

// takes is how many more nodes of the clique the slice holds: every pod it has not started yet, or its
// released pods that are not bound, if more (a replacement for a failed pod).
func (h headed) takes() int { return max(h.size-h.started, h.unbound, 0) }

// freeCapacity counts the free nodes per clique from the cluster's nodes (their clique labels), its allocated
// ResourceClaims (a node is busy when a claim holds a device of gpuDriver there) and what the slices placed in
// each clique still take: a slice's clique is the one its released pods name, and it holds the nodes of all its
// pods not started yet, released or still held. (Releasing a slice's pods takes one write per pod: a pass cut
// short by a conflict or a restart leaves some held, and the next domain's pick must not take their nodes.)
// picked adds the cliques the controller picked for a domain's slices whose released pods the live read does not
// show yet (slice size by clique).
//
// A released pod is one the controller released for a domain it manages: its label names a domain of managed
// in its namespace, and it carries the clique annotation, which only the controller may write (the chart's
// placement-mark policy). The label and the rest of the pod are the tenant's own to write, so a domain takes at
// most its spec.numNodes nodes less those of its pods already bound, and a clique no node carries takes
// nothing: a tenant cannot make other tenants' domains wait by creating pods that look released.
func freeCapacity(nodes []metav1.PartialObjectMetadata, claims []resourcev1.ResourceClaim, gpuDriver string, pods []corev1.Pod,
	managed map[domainKey]sliceplan.Plan, picked map[domainKey]map[string]int) Capacity {
	busy := map[string]bool{}
	for i := range claims {
		c := &claims[i]
		if c.Status.Allocation == nil {
			continue
		}
		holdsGPU := false
		for _, r := range c.Status.Allocation.Devices.Results {
			holdsGPU = holdsGPU || r.Driver == gpuDriver
		}
		if node, ok := allocation.Node(c); ok && holdsGPU {
			busy[node] = true
		}
	}
	free := Capacity{}
	for _, n := range nodes {
		clique := n.Labels[TopologyKey]
		if clique == "" {
			continue
		}
		if _, seen := free[clique]; !seen {
			free[clique] = 0
		}
		if !busy[n.Name] {
			free[clique]++
		}
	}
	// left is, per domain, how many more nodes it may take: spec.numNodes less its bound pods.
	left := map[domainKey]int{}
	for k, plan := range managed {
		left[k] = plan.Nodes()
	}
	placed := map[domainKey]map[string]*headed{}
	for i := range pods {
		p := &pods[i]
		k := domainKey{p.Namespace, p.Labels[v1beta1.PlacementDomainLabelKey]}
		plan, ok := managed[k]
		if !ok {
			continue
		}
		if p.Spec.NodeName != "" && !finished(p) {
			left[k]--
		}
		c := p.Annotations[v1beta1.PlacementCliqueAnnotationKey]
		if _, ok := free[c]; !ok || held(p) {
			continue
		}
		if placed[k] == nil {
			placed[k] = map[string]*headed{}
		}
		h := placed[k][c]
		if h == nil {
			h = &headed{}
			placed[k][c] = h
		}
		h.size = max(h.size, sliceSize(plan, p))
		if p.Spec.NodeName != "" || finished(p) {
			h.started++
		} else {
			h.unbound++
		}
	}
	for k, cliques := range picked {
		if _, ok := managed[k]; !ok {
			continue
		}
		for c, size := range cliques {
			if _, ok := free[c]; !ok || placed[k][c] != nil {
				continue
			}
			if placed[k] == nil {
				placed[k] = map[string]*headed{}
			}
			placed[k][c] = &headed{size: size}
		}
	}
	for k, cliques := range placed {
		for _, c := range slices.Sorted(maps.Keys(cliques)) {
			take := min(cliques[c].takes(), max(left[k], 0))
			free[c] -= take
			left[k] -= take
		}
	}
	return free
}

// sliceSize is the size of the slice a released pod of plan belongs to: the plan's only slice, or its rank's;
// 0 for a pod of a sliced domain without a rank (its released siblings in the clique say the size).
func sliceSize(plan sliceplan.Plan, p *corev1.Pod) int {
	if len(plan.Slices) == 1 {
		return plan.Slices[0].Size
	}
	rank, ok, err := sliceplan.RankOf(p.Labels, p.Annotations)
	if err != nil || !ok {
		return 0
	}
	if sl, in := plan.SliceOf(rank); in {
		return sl.Size
	}
	return 0
}

// pick is the clique that fits need nodes most tightly (the fewest free nodes that still hold them, so large
// free cliques stay whole for large domains); ties go to the first name. "" when none fits.
func (c Capacity) pick(need int) string {
	best, bestFree := "", 0
	for _, name := range c.names() {
		if f := c[name]; f >= need && (best == "" || f < bestFree) {
			best, bestFree = name, f
		}
	}
	return best
}

func (c Capacity) names() []string {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// String lists the free nodes of every clique, for messages.
func (c Capacity) String() string {
	if len(c) == 0 {
		return "no node carries the NVLink clique label " + TopologyKey
	}
	parts := make([]string, 0, len(c))
	for _, n := range c.names() {
		parts = append(parts, fmt.Sprintf("%s: %d", n, max(c[n], 0)))
	}
	return "free nodes per clique: " + strings.Join(parts, ", ")
}
