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

package testing

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// ComputeDomainWrapper builds a ComputeDomain.
type ComputeDomainWrapper struct{ v1beta1.ComputeDomain }

// MakeComputeDomain starts a ComputeDomain named name in namespace ns whose channel template is
// "<name>-channel".
func MakeComputeDomain(name, ns string) *ComputeDomainWrapper {
	return &ComputeDomainWrapper{v1beta1.ComputeDomain{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "ComputeDomain"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1beta1.ComputeDomainSpec{
			Channel: v1beta1.ComputeDomainChannelSpec{
				ResourceClaimTemplate: v1beta1.ComputeDomainResourceClaimTemplate{Name: name + "-channel"},
			},
		},
	}}
}

// Obj returns the built ComputeDomain.
func (w *ComputeDomainWrapper) Obj() *v1beta1.ComputeDomain { return &w.ComputeDomain }

// Clone returns a deep copy of the wrapper, to build variants of one object.
func (w *ComputeDomainWrapper) Clone() *ComputeDomainWrapper {
	return &ComputeDomainWrapper{*w.DeepCopy()}
}

// UID sets metadata.uid.
func (w *ComputeDomainWrapper) UID(uid types.UID) *ComputeDomainWrapper {
	w.ObjectMeta.UID = uid
	return w
}

// Generation sets metadata.generation.
func (w *ComputeDomainWrapper) Generation(g int64) *ComputeDomainWrapper {
	w.ObjectMeta.Generation = g
	return w
}

// Label sets a label.
func (w *ComputeDomainWrapper) Label(k, v string) *ComputeDomainWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[k] = v
	return w
}

// Channel sets the name of the workload ResourceClaimTemplate.
func (w *ComputeDomainWrapper) Channel(template string) *ComputeDomainWrapper {
	w.Spec.Channel.ResourceClaimTemplate.Name = template
	return w
}

// AllocationMode sets spec.channel.allocationMode.
func (w *ComputeDomainWrapper) AllocationMode(m v1beta1.ComputeDomainAllocationMode) *ComputeDomainWrapper {
	w.Spec.Channel.AllocationMode = m
	return w
}

// NumNodes sets spec.numNodes.
func (w *ComputeDomainWrapper) NumNodes(n int32) *ComputeDomainWrapper {
	w.Spec.NumNodes = n
	return w
}

// SliceSize sets spec.sliceSize.
func (w *ComputeDomainWrapper) SliceSize(n int32) *ComputeDomainWrapper {
	w.Spec.SliceSize = n
	return w
}

// Slice adds or replaces a status.slices entry (keyed by index).
func (w *ComputeDomainWrapper) Slice(s v1beta1.ComputeDomainSlice) *ComputeDomainWrapper {
	w.Status.Slices = upsert(w.Status.Slices, s, func(o v1beta1.ComputeDomainSlice) bool { return o.Index == s.Index })
	return w
}

// StatusValue sets the compatible status.status.
func (w *ComputeDomainWrapper) StatusValue(s v1beta1.ComputeDomainStatusValue) *ComputeDomainWrapper {
	w.Status.Status = s
	return w
}

// Node adds or replaces a status.nodes entry (keyed by name).
func (w *ComputeDomainWrapper) Node(n v1beta1.ComputeDomainNode) *ComputeDomainWrapper {
	w.Status.Nodes = upsert(w.Status.Nodes, n, func(o v1beta1.ComputeDomainNode) bool { return o.Name == n.Name })
	return w
}

// Clique adds or replaces a status.cliques entry (keyed by cliqueID).
func (w *ComputeDomainWrapper) Clique(c v1beta1.ComputeDomainClique) *ComputeDomainWrapper {
	w.Status.Cliques = upsert(w.Status.Cliques, c, func(o v1beta1.ComputeDomainClique) bool { return o.CliqueID == c.CliqueID })
	return w
}

// NodeCounts sets status.readyNodes and status.totalNodes.
func (w *ComputeDomainWrapper) NodeCounts(ready, total int32) *ComputeDomainWrapper {
	w.Status.ReadyNodes = ready
	w.Status.TotalNodes = total
	return w
}

// Condition adds or replaces a status condition (keyed by type).
func (w *ComputeDomainWrapper) Condition(c metav1.Condition) *ComputeDomainWrapper {
	w.Status.Conditions = upsert(w.Status.Conditions, c, func(o metav1.Condition) bool { return o.Type == c.Type })
	return w
}

// ObservedGeneration sets status.observedGeneration.
func (w *ComputeDomainWrapper) ObservedGeneration(g int64) *ComputeDomainWrapper {
	w.Status.ObservedGeneration = g
	return w
}

// upsert replaces the entry of list that is the same as item (a list-map's key), or appends item.
func upsert[T any](list []T, item T, same func(T) bool) []T {
	if i := slices.IndexFunc(list, same); i >= 0 {
		list[i] = item
		return list
	}
	return append(list, item)
}

// MakeComputeDomainNode returns a status.nodes entry.
func MakeComputeDomainNode(name, ip, cliqueID string, index int32, status v1beta1.ComputeDomainStatusValue) v1beta1.ComputeDomainNode {
	return v1beta1.ComputeDomainNode{Name: name, IPAddress: ip, CliqueID: cliqueID, Index: index, Status: status}
}
