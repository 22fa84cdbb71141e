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

package metering

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// APIClaims watches every ResourceClaim and remembers what it saw of each
// (namespace, name, creation, every device it was allocated) after the claim
// is deleted, for Retention: a claim deleted before the meter pulls its
// interval is still checked. A claim not seen is asked of the API server.
type APIClaims struct {
	client kubernetes.Interface
	clock  clock.PassiveClock
	// Retention is how long a deleted claim is remembered (the plugins'
	// ledger retention).
	retention time.Duration

	mu      sync.Mutex
	seen    map[types.UID]ClaimFacts
	deleted map[types.UID]time.Time
	since   time.Time
}

// NewAPIClaims returns claims that are not watched until Run.
func NewAPIClaims(client kubernetes.Interface, clk clock.PassiveClock, retention time.Duration) *APIClaims {
	return &APIClaims{client: client, clock: clk, retention: retention, seen: map[types.UID]ClaimFacts{}, deleted: map[types.UID]time.Time{}}
}

// Run watches the claims until ctx ends; it returns once the first list is
// in (WatchingSince is set then) or with the error that kept it from it.
func (c *APIClaims) Run(ctx context.Context) error {
	f := informers.NewSharedInformerFactory(c.client, 0)
	inf := f.Resource().V1().ResourceClaims().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.observe(obj, false) },
		UpdateFunc: func(_, obj any) { c.observe(obj, false) },
		DeleteFunc: func(obj any) { c.observe(obj, true) },
	}); err != nil {
		return fmt.Errorf("watch resourceclaims: %w", err)
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("watch resourceclaims: %w", context.Cause(ctx))
	}
	c.mu.Lock()
	c.since = c.clock.Now().UTC()
	c.mu.Unlock()
	return nil
}

func (c *APIClaims) observe(obj any, deleted bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	claim, ok := obj.(*resourceapi.ResourceClaim)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[claim.UID] = merge(c.seen[claim.UID], claim)
	now := c.clock.Now()
	if deleted {
		c.deleted[claim.UID] = now
	}
	for uid, at := range c.deleted {
		if now.Sub(at) > c.retention {
			delete(c.seen, uid)
			delete(c.deleted, uid)
		}
	}
}

// merge adds what claim says to what was seen of it: a claim keeps every
// device it was ever allocated.
func merge(f ClaimFacts, claim *resourceapi.ResourceClaim) ClaimFacts {
	f.UID, f.Namespace, f.Name, f.Created = claim.UID, claim.Namespace, claim.Name, claim.CreationTimestamp.UTC()
	if a := claim.Status.Allocation; a != nil {
		for _, r := range a.Devices.Results {
			if d := r.Pool + "/" + r.Device; !slices.Contains(f.Devices, d) {
				f.Devices = append(f.Devices, d)
			}
		}
	}
	return f
}

// Claim implements Claims.
func (c *APIClaims) Claim(ctx context.Context, namespace, name string, uid types.UID) (ClaimFacts, bool, error) {
	c.mu.Lock()
	f, ok := c.seen[uid]
	c.mu.Unlock()
	if ok {
		return f, true, nil
	}
	claim, err := c.client.ResourceV1().ResourceClaims(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return ClaimFacts{}, false, nil
	case err != nil:
		return ClaimFacts{}, false, fmt.Errorf("get resourceclaim %s/%s: %w", namespace, name, err)
	case claim.UID != uid:
		// Another claim of that name: the interval's is gone.
		return ClaimFacts{}, false, nil
	}
	return merge(ClaimFacts{}, claim), true, nil
}

// WatchingSince implements Claims.
func (c *APIClaims) WatchingSince() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.since
}
