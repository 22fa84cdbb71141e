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
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// deviceTypeAttribute is the gpu.nvidia.com device attribute that says gpu or mig.
const deviceTypeAttribute resourceapi.QualifiedName = "type"

// index holds the lookups the views need over one Snapshot.
type index struct {
	snap *Snapshot
	// domains by "namespace/name", and their holder IDs by UID and by "namespace/claim template".
	domains           map[string]*v1beta1.ComputeDomain
	domainsByUID      map[types.UID]holderID
	domainsByTemplate map[string]holderID
	claims            map[string]*resourceapi.ResourceClaim
	pods              map[string]*corev1.Pod
	nodes             map[string]*corev1.Node
	// poolNode maps a driver's pool to the node its ResourceSlices are for.
	poolNode map[poolKey]string
	gpus     map[string]nodeGPUs
	imex     map[string]*v1beta1.IMEXNode
}

type poolKey struct{ driver, pool string }

// nodeGPUs are a node's published GPUs and the unhealthy ones, each with its taints.
type nodeGPUs struct {
	total     int
	unhealthy []string
}

func objKey(namespace, name string) string { return namespace + "/" + name }

func newIndex(s *Snapshot) *index {
	ix := &index{
		snap:              s,
		domains:           map[string]*v1beta1.ComputeDomain{},
		domainsByUID:      map[types.UID]holderID{},
		domainsByTemplate: map[string]holderID{},
		claims:            map[string]*resourceapi.ResourceClaim{},
		pods:              map[string]*corev1.Pod{},
		nodes:             map[string]*corev1.Node{},
		poolNode:          map[poolKey]string{},
		gpus:              map[string]nodeGPUs{},
		imex:              map[string]*v1beta1.IMEXNode{},
	}
	for i := range s.ComputeDomains {
		d := &s.ComputeDomains[i]
		id := holderID{HolderComputeDomain, d.Namespace, d.Name}
		ix.domains[objKey(d.Namespace, d.Name)] = d
		if d.UID != "" {
			ix.domainsByUID[d.UID] = id
		}
		ix.domainsByTemplate[objKey(d.Namespace, d.Spec.Channel.ResourceClaimTemplate.Name)] = id
	}
	for i := range s.ResourceClaims {
		c := &s.ResourceClaims[i]
		ix.claims[objKey(c.Namespace, c.Name)] = c
	}
	for i := range s.Pods {
		p := &s.Pods[i]
		ix.pods[objKey(p.Namespace, p.Name)] = p
	}
	for i := range s.Nodes {
		ix.nodes[s.Nodes[i].Name] = &s.Nodes[i]
	}
	for i := range s.IMEXNodes {
		ix.imex[s.IMEXNodes[i].Spec.NodeName] = &s.IMEXNodes[i]
	}
	for i := range s.ResourceSlices {
		ix.addSlice(&s.ResourceSlices[i])
	}
	return ix
}

// addSlice records the node of the slice's pool and, for gpu.nvidia.com, the node's GPUs and their health.
func (ix *index) addSlice(rs *resourceapi.ResourceSlice) {
	if rs.Spec.NodeName == nil || *rs.Spec.NodeName == "" {
		return
	}
	node := *rs.Spec.NodeName
	ix.poolNode[poolKey{rs.Spec.Driver, rs.Spec.Pool.Name}] = node
	if rs.Spec.Driver != v1beta1.GPUDriverName {
		return
	}
	g := ix.gpus[node]
	for _, d := range rs.Spec.Devices {
		if t := d.Attributes[deviceTypeAttribute].StringValue; t != nil && *t != v1beta1.DeviceTypeGpu {
			continue
		}
		g.total++
		var taints []string
		for _, t := range d.Taints {
			if t.Effect != resourceapi.DeviceTaintEffectNone {
				taints = append(taints, taintString(t.Key, t.Value, string(t.Effect)))
			}
		}
		if len(taints) > 0 {
			g.unhealthy = append(g.unhealthy, fmt.Sprintf("%s: %s", d.Name, strings.Join(taints, ", ")))
		}
	}
	ix.gpus[node] = g
}

// claimDomain is the domain whose workload claim c is (the controller labels them with the domain's UID and
// annotates them with its name).
func (ix *index) claimDomain(c *resourceapi.ResourceClaim) (holderID, bool) {
	if uid, ok := c.Labels[v1beta1.WorkloadClaimLabelKey]; ok {
		if id, ok := ix.domainsByUID[types.UID(uid)]; ok {
			return id, true
		}
	}
	ns, name := c.Annotations[v1beta1.DomainNamespaceAnnotation], c.Annotations[v1beta1.DomainNameAnnotation]
	if ns != "" && name != "" {
		return holderID{HolderComputeDomain, ns, name}, true
	}
	return holderID{}, false
}

// podDomain is the domain the pod joins: one of its claims comes from the domain's claim template, or is a
// workload claim of the domain.
func (ix *index) podDomain(namespace, name string) (holderID, bool) {
	p, ok := ix.pods[objKey(namespace, name)]
	if !ok {
		return holderID{}, false
	}
	for _, pc := range p.Spec.ResourceClaims {
		if pc.ResourceClaimTemplateName != nil {
			if id, ok := ix.domainsByTemplate[objKey(namespace, *pc.ResourceClaimTemplateName)]; ok {
				return id, true
			}
		}
		if pc.ResourceClaimName != nil {
			if c, ok := ix.claims[objKey(namespace, *pc.ResourceClaimName)]; ok {
				if id, ok := ix.claimDomain(c); ok {
					return id, true
				}
			}
		}
	}
	for _, st := range p.Status.ResourceClaimStatuses {
		if st.ResourceClaimName == nil {
			continue
		}
		if c, ok := ix.claims[objKey(namespace, *st.ResourceClaimName)]; ok {
			if id, ok := ix.claimDomain(c); ok {
				return id, true
			}
		}
	}
	return holderID{}, false
}

// naturalCompare orders strings with their digit runs compared as numbers, so node-2 comes before node-10.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digitPrefix(a), digitPrefix(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Or(cmp.Compare(len(na), len(nb)), cmp.Compare(na, nb)); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digitPrefix(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}
