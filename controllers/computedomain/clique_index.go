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

package computedomain

import (
	"context"
	"fmt"
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
)

// cliqueIndex counts the nodes of each NVLink clique (the PlacementTopologyKey label), kept up to date by the
// cache's Node metadata events, so that a reconcile reads the clique sizes without listing every node: a list
// of 2,000 nodes' metadata per reconcile (a deep copy of each) was 57 % of the controller's CPU while 1,000
// domains were created (docs/benchmarks.md, "ComputeDomain controller burst").
type cliqueIndex struct {
	mu       sync.RWMutex
	cliqueOf map[string]string // node name → its clique; nodes without the label are not in it
	sizes    map[string]int    // clique → its nodes
	synced   func() bool       // the handler has seen every node of the informer's initial list
}

func newCliqueIndex() *cliqueIndex {
	return &cliqueIndex{cliqueOf: map[string]string{}, sizes: map[string]int{}, synced: func() bool { return false }}
}

// watch feeds the index from the cache's Node metadata informer (the one the controller's other node
// lookups share).
func (x *cliqueIndex) watch(ctx context.Context, c ctrlcache.Cache) error {
	node := &metav1.PartialObjectMetadata{}
	node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	inf, err := c.GetInformer(ctx, node)
	if err != nil {
		return fmt.Errorf("the Node metadata informer: %w", err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    x.observe,
		UpdateFunc: func(_, obj any) { x.observe(obj) },
		DeleteFunc: x.forget,
	})
	if err != nil {
		return fmt.Errorf("watch Node metadata for NVLink cliques: %w", err)
	}
	x.mu.Lock()
	x.synced = reg.HasSynced
	x.mu.Unlock()
	return nil
}

// observe records a node's clique (none when it lost the label).
func (x *cliqueIndex) observe(obj any) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	x.set(m.GetName(), m.GetLabels()[PlacementTopologyKey])
}

// forget drops a deleted node, also when the informer hands over only its last known state.
func (x *cliqueIndex) forget(obj any) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if m, ok := obj.(metav1.Object); ok {
		x.set(m.GetName(), "")
	}
}

// set moves node into clique ("": out of every clique).
func (x *cliqueIndex) set(node, clique string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	old, had := x.cliqueOf[node]
	if had && old == clique {
		return
	}
	if had {
		if x.sizes[old]--; x.sizes[old] <= 0 {
			delete(x.sizes, old)
		}
		delete(x.cliqueOf, node)
	}
	if clique != "" {
		x.cliqueOf[node] = clique
		x.sizes[clique]++
	}
}

// Sizes returns a copy of the clique sizes, and false until the index has seen every node the cache has.
func (x *cliqueIndex) Sizes() (map[string]int, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if !x.synced() {
		return nil, false
	}
	return maps.Clone(x.sizes), true
}
