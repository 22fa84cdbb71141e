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
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// DomainLookup finds ComputeDomains by UID in a local cache and says when one
// changes there, so that a prepare waiting for its node's place in a domain
// wakes on the domain's next status write instead of polling.
type DomainLookup interface {
	// DomainByUID returns the domain with that UID in namespace (in any
	// namespace when namespace is ""), or nil when there is none.
	DomainByUID(ctx context.Context, namespace string, uid types.UID) (*apiv1beta1.ComputeDomain, error)
	// Changed returns a channel that is closed the next time the domain with
	// that UID is added, updated or deleted in the cache, after the call. A
	// caller subscribes before it reads the domain, so no change is missed.
	Changed(uid types.UID) <-chan struct{}
	// Hold keeps the namespace's domains watched until release is called,
	// and returns once they are listed (or with ctx's error): a prepare
	// holds its claim's namespace for the whole call.
	Hold(ctx context.Context, namespace string) (release func(), err error)
}

// DomainWatchGrace is how long a namespace's domains stay watched after the
// last prepare there looked one up or waited: the pods of one Job that land on
// a node a moment apart share the watch.
const DomainWatchGrace = 2 * time.Second

// domainUIDIndex indexes a namespace's ComputeDomains by UID.
const domainUIDIndex = "uid"

// WatchedDomains looks ComputeDomains up in informers of one namespace each,
// started by a lookup in that namespace and stopped once nothing holds it and
// no lookup has come for the grace time. A node's plugin so watches a
// namespace's domains only while it prepares claims there, mostly for the
// moments a channel claim waits for its node's place in its domain. A
// domain's status lists every node of the domain, and with every plugin of
// the cluster watching every domain all the time, each status write of an
// N-node domain reached every plugin: N² bytes per formation (6.8 GB at 1,024
// nodes). The price is one list of the namespace's ComputeDomains when a
// prepare there finds no informer running.
type WatchedDomains struct {
	client  client.WithWatch
	grace   time.Duration
	clock   clock.WithTicker
	changes DomainChanges

	mu      sync.Mutex
	watches map[string]*namespaceWatch
}

// namespaceWatch is the informer of one namespace's ComputeDomains.
type namespaceWatch struct {
	informer toolscache.SharedIndexInformer
	stop     context.CancelFunc
	// synced is closed once the informer has listed the namespace, or failed
	// to before its stop (err).
	synced chan struct{}
	err    error
	// holders are the Holds not released; lastUse the latest lookup or
	// release.
	holders int
	lastUse time.Time
}

// NewWatchedDomains looks domains up through c; a namespace's informer stops
// once nothing has held or looked it up for grace.
func NewWatchedDomains(c client.WithWatch, grace time.Duration, clk clock.WithTicker) *WatchedDomains {
	return &WatchedDomains{client: c, grace: grace, clock: clk, watches: map[string]*namespaceWatch{}}
}

// Run stops the informers that nothing uses, until ctx ends, and then all of
// them.
func (w *WatchedDomains) Run(ctx context.Context) {
	ticker := w.clock.NewTicker(w.grace / 2)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			w.stopUnused(time.Time{})
			return
		case <-ticker.C():
			w.stopUnused(w.clock.Now().Add(-w.grace))
		}
	}
}

// stopUnused stops the informers that nothing holds and that were last used
// before cutoff (every one for the zero time).
func (w *WatchedDomains) stopUnused(cutoff time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ns, nw := range w.watches {
		if cutoff.IsZero() || (nw.holders == 0 && nw.lastUse.Before(cutoff)) {
			nw.stop()
			delete(w.watches, ns)
		}
	}
}

// Hold implements DomainLookup: the namespace's informer (started now when
// none runs) is not stopped before release.
func (w *WatchedDomains) Hold(ctx context.Context, namespace string) (release func(), err error) {
	w.mu.Lock()
	nw := w.watchLocked(ctx, namespace)
	nw.holders++
	w.mu.Unlock()
	var once sync.Once
	release = func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			nw.holders--
			nw.lastUse = w.clock.Now()
		})
	}
	if err := nw.wait(ctx); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// wait returns once the informer has listed its namespace, with its error,
// or with ctx's.
func (nw *namespaceWatch) wait(ctx context.Context) error {
	select {
	case <-nw.synced:
		return nw.err
	case <-ctx.Done():
		return fmt.Errorf("the list of the namespace's ComputeDomains: %w", context.Cause(ctx))
	}
}

// Watching returns the namespaces whose informers run ("" for every
// namespace), for tests and diagnostics.
func (w *WatchedDomains) Watching() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.watches))
	for ns := range w.watches {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// DomainByUID implements DomainLookup.
func (w *WatchedDomains) DomainByUID(ctx context.Context, namespace string, uid types.UID) (*apiv1beta1.ComputeDomain, error) {
	nw := w.watch(ctx, namespace)
	if err := nw.wait(ctx); err != nil {
		return nil, fmt.Errorf("look up ComputeDomain %s in namespace %q: %w", uid, namespace, err)
	}
	objs, err := nw.informer.GetIndexer().ByIndex(domainUIDIndex, string(uid))
	if err != nil {
		return nil, fmt.Errorf("look up ComputeDomain %s: %w", uid, err)
	}
	for _, o := range objs {
		if cd, ok := o.(*apiv1beta1.ComputeDomain); ok {
			return cd.DeepCopy(), nil
		}
	}
	return nil, nil
}

// Changed implements DomainLookup.
func (w *WatchedDomains) Changed(uid types.UID) <-chan struct{} { return w.changes.Changed(uid) }

// watch returns the namespace's informer, started when none runs, and marks
// it used now.
func (w *WatchedDomains) watch(ctx context.Context, namespace string) *namespaceWatch {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.watchLocked(ctx, namespace)
}

func (w *WatchedDomains) watchLocked(ctx context.Context, namespace string) *namespaceWatch {
	if nw, ok := w.watches[namespace]; ok {
		nw.lastUse = w.clock.Now()
		return nw
	}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := &apiv1beta1.ComputeDomainList{}
			return list, w.client.List(ctx, list, client.InNamespace(namespace), &client.ListOptions{Raw: &opts})
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return w.client.Watch(ctx, &apiv1beta1.ComputeDomainList{}, client.InNamespace(namespace), &client.ListOptions{Raw: &opts})
		},
	}
	inf := toolscache.NewSharedIndexInformer(toolscache.ToListWatcherWithWatchListSemantics(lw, w.client), &apiv1beta1.ComputeDomain{}, 0, toolscache.Indexers{
		domainUIDIndex: func(obj any) ([]string, error) {
			o, ok := obj.(client.Object)
			if !ok {
				return nil, nil
			}
			return []string{string(o.GetUID())}, nil
		},
	})
	// The informer lives past the lookup that started it, until it is unused.
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	nw := &namespaceWatch{informer: inf, stop: stop, synced: make(chan struct{}), lastUse: w.clock.Now()}
	if _, err := inf.AddEventHandler(w.changes.Handler()); err != nil {
		nw.err = fmt.Errorf("watch the ComputeDomains of namespace %q: %w", namespace, err)
		close(nw.synced)
		stop()
		return nw
	}
	w.watches[namespace] = nw
	go inf.RunWithContext(runCtx)
	go func() {
		defer close(nw.synced)
		if !toolscache.WaitForCacheSync(runCtx.Done(), inf.HasSynced) {
			nw.err = fmt.Errorf("the list of namespace %q's ComputeDomains: stopped before it synced", namespace)
		}
	}()
	klog.FromContext(ctx).V(2).Info("Watching the ComputeDomains of a namespace", "namespace", namespace)
	return nw
}

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
