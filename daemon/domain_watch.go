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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// DomainWatch keeps the latest version of one ComputeDomain from a watch on
// that object alone (field selector metadata.name), so a daemon reads its
// domain without API calls and hears of every change. It re-reads and
// re-watches when the watch ends. It follows the domain by UID: a domain of
// the same name with another UID (the domain deleted and created anew) is
// not this daemon's and reads as absent, so a lingering daemon of a deleted
// domain never joins the new one.
type DomainWatch struct {
	client  client.WithWatch
	key     client.ObjectKey
	uid     types.UID
	changed chan struct{}

	mu     sync.Mutex
	domain *v1beta1.ComputeDomain
	synced bool
}

// NewDomainWatch returns a watch of the domain key with uid; Run starts it.
func NewDomainWatch(c client.WithWatch, key client.ObjectKey, uid types.UID) *DomainWatch {
	return &DomainWatch{client: c, key: key, uid: uid, changed: make(chan struct{}, 1)}
}

// Changed fires after the domain changed (notifications collapse).
func (w *DomainWatch) Changed() <-chan struct{} { return w.changed }

// Get returns the latest domain (nil when it does not exist or was not read
// yet). It is a DomainGetter.
func (w *DomainWatch) Get(context.Context) (*v1beta1.ComputeDomain, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.domain == nil {
		return nil, nil
	}
	return w.domain.DeepCopy(), nil
}

// Synced tells whether the domain was read at least once.
func (w *DomainWatch) Synced() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.synced
}

// set records cd as the domain; one of another UID is not ours and counts as none.
func (w *DomainWatch) set(cd *v1beta1.ComputeDomain) {
	if cd != nil && cd.UID != w.uid {
		cd = nil
	}
	w.mu.Lock()
	w.domain, w.synced = cd, true
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// Run reads and watches the domain until ctx ends.
func (w *DomainWatch) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if err := w.watchOnce(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Watching the ComputeDomain failed; retrying", "domain", w.key, "retryIn", backoff)
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

// watchOnce reads the domain, then applies watch events until the watch
// ends (nil) or fails.
func (w *DomainWatch) watchOnce(ctx context.Context) error {
	var cd v1beta1.ComputeDomain
	err := w.client.Get(ctx, w.key, &cd)
	switch {
	case apierrors.IsNotFound(err):
		w.set(nil)
	case err != nil:
		return err
	default:
		w.set(&cd)
	}
	opts := []client.ListOption{client.InNamespace(w.key.Namespace), client.MatchingFields{"metadata.name": w.key.Name}}
	if err == nil {
		opts = append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: cd.ResourceVersion}})
	}
	wi, err := w.client.Watch(ctx, &v1beta1.ComputeDomainList{}, opts...)
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
				if obj, ok := ev.Object.(*v1beta1.ComputeDomain); ok && obj.Name == w.key.Name {
					w.set(obj.DeepCopy())
				}
			case watch.Deleted:
				if obj, ok := ev.Object.(*v1beta1.ComputeDomain); ok && obj.Name == w.key.Name && obj.UID == w.uid {
					w.set(nil)
				}
			case watch.Error:
				return apierrors.FromObject(ev.Object)
			}
		}
	}
}
