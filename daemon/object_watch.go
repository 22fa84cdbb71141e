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

package daemon

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// objectWatch keeps the latest version of one object from a watch on that
// object alone (field selector metadata.name), so a daemon reads it without
// API calls and hears of every change. It re-reads and re-watches when the
// watch ends. accept, when set, says whether an object of the name is the
// one followed (a UID check); one it refuses reads as absent.
type objectWatch[T client.Object, L client.ObjectList] struct {
	client  client.WithWatch
	key     client.ObjectKey
	kind    string
	accept  func(T) bool
	newObj  func() T
	newList func() L
	changed chan struct{}

	mu     sync.Mutex
	obj    T
	exists bool
	synced bool
}

func newObjectWatch[T client.Object, L client.ObjectList](c client.WithWatch, key client.ObjectKey, kind string, newObj func() T, newList func() L, accept func(T) bool) *objectWatch[T, L] {
	return &objectWatch[T, L]{client: c, key: key, kind: kind, accept: accept, newObj: newObj, newList: newList, changed: make(chan struct{}, 1)}
}

// Changed fires after the object changed (notifications collapse).
func (w *objectWatch[T, L]) Changed() <-chan struct{} { return w.changed }

// Synced tells whether the object was read at least once.
func (w *objectWatch[T, L]) Synced() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.synced
}

// get returns a copy of the latest object and whether it exists.
func (w *objectWatch[T, L]) get() (T, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.exists {
		var zero T
		return zero, false
	}
	return w.obj.DeepCopyObject().(T), true
}

// set records obj (exists false: none); one accept refuses counts as none.
func (w *objectWatch[T, L]) set(obj T, exists bool) {
	if exists && w.accept != nil && !w.accept(obj) {
		exists = false
	}
	w.mu.Lock()
	w.obj, w.exists, w.synced = obj, exists, true
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// Run reads and watches the object until ctx ends.
func (w *objectWatch[T, L]) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if err := w.watchOnce(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Watching failed; retrying", "kind", w.kind, "object", w.key, "retryIn", backoff)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 10*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
	}
}

// watchOnce reads the object, then applies watch events until the watch
// ends (nil) or fails.
func (w *objectWatch[T, L]) watchOnce(ctx context.Context) error {
	obj := w.newObj()
	err := w.client.Get(ctx, w.key, obj)
	switch {
	case apierrors.IsNotFound(err):
		w.set(obj, false)
	case err != nil:
		return err
	default:
		w.set(obj, true)
	}
	opts := []client.ListOption{client.InNamespace(w.key.Namespace), client.MatchingFields{"metadata.name": w.key.Name}}
	if err == nil {
		opts = append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: obj.GetResourceVersion()}})
	}
	wi, err := w.client.Watch(ctx, w.newList(), opts...)
	if err != nil {
		return err
	}
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return nil
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				if o, ok := ev.Object.(T); ok && o.GetName() == w.key.Name {
					w.set(o.DeepCopyObject().(T), true)
				}
			case watch.Deleted:
				if o, ok := ev.Object.(T); ok && o.GetName() == w.key.Name && (w.accept == nil || w.accept(o)) {
					w.set(o, false)
				}
			case watch.Error:
				return apierrors.FromObject(ev.Object)
			}
		}
	}
}
