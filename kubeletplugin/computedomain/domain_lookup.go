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
	"sync"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// DomainLookup finds ComputeDomains by UID in a local cache (prepare must not
// cost API reads) and says when one changes there, so that a prepare waiting
// for its node's place in a domain wakes on the domain's next status write
// instead of polling.
type DomainLookup interface {
	// DomainByUID returns the domain, or nil when none with that UID exists.
	DomainByUID(ctx context.Context, uid types.UID) (*apiv1beta1.ComputeDomain, error)
	// Changed returns a channel that is closed the next time the domain with
	// that UID is added, updated or deleted in the cache, after the call. A
	// caller subscribes before it reads the domain, so no change is missed.
	Changed(uid types.UID) <-chan struct{}
}

// DomainUIDIndex is the field index CachedDomains needs on ComputeDomains.
const DomainUIDIndex = "metadata.uid"

// IndexDomainUID is the indexer function for DomainUIDIndex.
func IndexDomainUID(o client.Object) []string { return []string{string(o.GetUID())} }

// CachedDomains looks domains up in a controller-runtime cache and tells
// waiters when one changes, from the cache's ComputeDomain informer.
type CachedDomains struct {
	cache   cache.Cache
	changes DomainChanges
}

// NewCachedDomains looks domains up in c; Watch must run before c starts.
func NewCachedDomains(c cache.Cache) *CachedDomains { return &CachedDomains{cache: c} }

// Watch adds the DomainUIDIndex and the change notifications to the cache's
// ComputeDomain informer. Call it before the cache starts.
func (c *CachedDomains) Watch(ctx context.Context) error {
	if err := c.cache.IndexField(ctx, &apiv1beta1.ComputeDomain{}, DomainUIDIndex, IndexDomainUID); err != nil {
		return fmt.Errorf("ComputeDomain cache: %w", err)
	}
	inf, err := c.cache.GetInformer(ctx, &apiv1beta1.ComputeDomain{}, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("ComputeDomain cache: %w", err)
	}
	if _, err := inf.AddEventHandler(c.changes.Handler()); err != nil {
		return fmt.Errorf("ComputeDomain cache: %w", err)
	}
	return nil
}

// DomainByUID implements DomainLookup.
func (c *CachedDomains) DomainByUID(ctx context.Context, uid types.UID) (*apiv1beta1.ComputeDomain, error) {
	var list apiv1beta1.ComputeDomainList
	if err := c.cache.List(ctx, &list, client.MatchingFields{DomainUIDIndex: string(uid)}); err != nil {
		return nil, fmt.Errorf("look up ComputeDomain %s: %w", uid, err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	return &list.Items[0], nil
}

// Changed implements DomainLookup.
func (c *CachedDomains) Changed(uid types.UID) <-chan struct{} { return c.changes.Changed(uid) }

// DomainChanges hands out, per domain UID, one channel that the domain's next
// change closes. Waiters of one domain share its channel, and a channel is
// dropped when it is closed, so it holds at most one channel per domain that
// someone waits for (and a domain's deletion closes its channel). The zero
// value is ready to use.
type DomainChanges struct {
	mu      sync.Mutex
	waiting map[types.UID]chan struct{}
}

// Changed returns the channel that the next Notify(uid) closes.
func (d *DomainChanges) Changed(uid types.UID) <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.waiting == nil {
		d.waiting = map[types.UID]chan struct{}{}
	}
	ch, ok := d.waiting[uid]
	if !ok {
		ch = make(chan struct{})
		d.waiting[uid] = ch
	}
	return ch
}

// Notify wakes the waiters of the domain with that UID.
func (d *DomainChanges) Notify(uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ch, ok := d.waiting[uid]; ok {
		close(ch)
		delete(d.waiting, uid)
	}
}

// Handler is the informer event handler that notifies on every add, update
// and delete (also of a tombstone). The informer calls it after its store
// holds the change, so a woken waiter reads the new object.
func (d *DomainChanges) Handler() toolscache.ResourceEventHandler {
	notify := func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if o, ok := obj.(client.Object); ok {
			d.Notify(o.GetUID())
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, obj any) { notify(obj) },
		DeleteFunc: notify,
	}
}
