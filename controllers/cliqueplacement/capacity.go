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
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/allocation"
)

// TopologyKey is the node label all pods of a domain share one value of: the NVLink clique.
const TopologyKey = v1beta1.CliqueNodeLabelKey

// Capacity is the free nodes of each NVLink clique: its labeled nodes less those with an allocated GPU and
// those that released pods of other domains are heading for.
type Capacity map[string]int

// domainKey names a managed domain as its pods do: their namespace and their PlacementDomainLabelKey value.
type domainKey struct{ namespace, value string }

// managedDomains is the spec.numNodes of each ComputeDomain the fallback places (those with spec.numNodes), by
// the key its pods carry.
func managedDomains(domains []v1beta1.ComputeDomain) map[domainKey]int {
	managed := map[domainKey]int{}
	for i := range domains {
		if cd := &domains[i]; cd.Spec.NumNodes > 0 {
			managed[domainKey{cd.Namespace, v1beta1.PlacementDomainLabelValue(cd.Name)}] = int(cd.Spec.NumNodes)
		}
	}
	return managed
}

// freeCapacity counts the free nodes per clique from the cluster's nodes (their clique labels), its allocated
// ResourceClaims (a node is busy when a claim holds a device of gpuDriver there) and the pods the fallback
// released that are not bound yet (each takes one node of its clique).
//
// A released pod is one the controller released for a domain it manages: its label names a domain of managed
// in its namespace, and it carries the clique annotation, which only the controller may write (the chart's
// placement-mark policy). The label and the rest of the pod are the tenant's own to write, so a domain's
// unbound pods take at most its spec.numNodes nodes less those of its pods already bound, and a clique no node
// carries takes nothing: a tenant cannot make other tenants' domains wait by creating pods that look released.
func freeCapacity(nodes []metav1.PartialObjectMetadata, claims []resourcev1.ResourceClaim, gpuDriver string, released []corev1.Pod, managed map[domainKey]int) Capacity {
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
	// left is, per domain, how many more nodes its unbound pods may take: spec.numNodes less its bound pods.
	left := map[domainKey]int{}
	for k, numNodes := range managed {
		left[k] = numNodes
	}
	for i := range released {
		if p := &released[i]; p.Spec.NodeName != "" && !finished(p) {
			left[domainKey{p.Namespace, p.Labels[v1beta1.PlacementDomainLabelKey]}]--
		}
	}
	for i := range released {
		p := &released[i]
		if p.Spec.NodeName != "" || finished(p) || held(p) {
			continue
		}
		k := domainKey{p.Namespace, p.Labels[v1beta1.PlacementDomainLabelKey]}
		if _, ok := managed[k]; !ok || left[k] <= 0 {
			continue
		}
		c := p.Annotations[v1beta1.PlacementCliqueAnnotationKey]
		if _, ok := free[c]; !ok {
			continue
		}
		free[c]--
		left[k]--
	}
	return free
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
