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
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/status"
)

// Verdicts holds what the fallback last found for each domain, for the ComputeDomain controller, which alone
// writes the domain's status: it reads a domain's verdict (Placement) when it computes the status, and watches
// Changes to compute it again when a verdict changes. After a restart the map is empty until the fallback has
// looked at each domain again; meanwhile the domain's condition stays as it was.
type Verdicts struct {
	mu       sync.Mutex
	byDomain map[types.NamespacedName]verdict
	changes  chan event.GenericEvent
}

// verdict is the placement found for one domain object (its UID) at one size (spec.numNodes).
type verdict struct {
	uid       types.UID
	numNodes  int32
	placement status.Placement
}

// changesBuffer is how many changed domains may wait for the ComputeDomain controller's watch.
const changesBuffer = 1024

// NewVerdicts returns an empty set of verdicts.
func NewVerdicts() *Verdicts {
	return &Verdicts{byDomain: map[types.NamespacedName]verdict{}, changes: make(chan event.GenericEvent, changesBuffer)}
}

// Placement returns the fallback's verdict on the domain, if it has one for this domain object at its
// current spec.numNodes.
func (v *Verdicts) Placement(cd *v1beta1.ComputeDomain) (status.Placement, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	got, ok := v.byDomain[types.NamespacedName{Namespace: cd.Namespace, Name: cd.Name}]
	if !ok || got.uid != cd.UID || got.numNodes != cd.Spec.NumNodes {
		return status.Placement{}, false
	}
	return got.placement, true
}

// Changes carries the domains whose verdict changed (a domain object with only its name and namespace).
func (v *Verdicts) Changes() <-chan event.GenericEvent { return v.changes }

// set records the verdict on cd and, when it differs from the last one, tells the watcher (waiting while its
// buffer is full, until ctx ends).
func (v *Verdicts) set(ctx context.Context, cd *v1beta1.ComputeDomain, p status.Placement) {
	key := types.NamespacedName{Namespace: cd.Namespace, Name: cd.Name}
	next := verdict{uid: cd.UID, numNodes: cd.Spec.NumNodes, placement: p}
	v.mu.Lock()
	changed := v.byDomain[key] != next
	v.byDomain[key] = next
	v.mu.Unlock()
	if !changed {
		return
	}
	ev := event.GenericEvent{Object: &v1beta1.ComputeDomain{}}
	ev.Object.SetNamespace(key.Namespace)
	ev.Object.SetName(key.Name)
	select {
	case v.changes <- ev:
	case <-ctx.Done():
	}
}

// forget drops the verdict on a domain that is gone or no longer placed by the fallback.
func (v *Verdicts) forget(key types.NamespacedName) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.byDomain, key)
}
