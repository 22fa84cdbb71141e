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

package suite

import (
	"context"
	"fmt"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// conditionLog is every distinct version (status, reason, message) of one
// condition type that a watch saw on one ComputeDomain, in the order it saw them.
// A spec that starts it before an action and reads it afterwards catches a
// condition that was set and cleared between two polls.
type conditionLog struct {
	condType string
	mu       sync.Mutex
	seen     []metav1.Condition
	errs     []string
}

// watchCondition starts logging condType of the named ComputeDomain from its
// current version on; the watch ends with the spec. The watch is a
// RetryWatcher: a connection the server closes is resumed from the last
// resource version, so no version in between is missed.
func watchCondition(ctx context.Context, cl client.WithWatch, ns, name, condType string) *conditionLog {
	GinkgoHelper()
	log := &conditionLog{condType: condType}
	var cd cdv1beta1.ComputeDomain
	Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cd)).To(Succeed(), "read ComputeDomain %s/%s before watching it", ns, name)
	log.record(&cd)

	wctx, cancel := context.WithCancel(context.Background())
	rw, err := watchtools.NewRetryWatcherWithContext(wctx, cd.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return cl.Watch(ctx, &cdv1beta1.ComputeDomainList{}, &client.ListOptions{Raw: &opts},
				client.InNamespace(ns), client.MatchingFields{"metadata.name": name})
		},
	})
	if err != nil {
		cancel()
		Expect(err).NotTo(HaveOccurred(), "watch ComputeDomain %s/%s", ns, name)
	}
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		for ev := range rw.ResultChan() {
			switch ev.Type {
			case watch.Added, watch.Modified:
				if cd, ok := ev.Object.(*cdv1beta1.ComputeDomain); ok {
					log.record(cd)
				}
			case watch.Error:
				log.fail(apierrors.FromObject(ev.Object).Error())
			}
		}
	}()
	DeferCleanup(func() {
		cancel()
		rw.Stop()
		<-done
	})
	return log
}

// record appends the domain's condition when it differs from the last one seen.
func (l *conditionLog) record(cd *cdv1beta1.ComputeDomain) {
	c := meta.FindStatusCondition(cd.Status.Conditions, l.condType)
	if c == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.seen); n > 0 {
		last := l.seen[n-1]
		if last.Status == c.Status && last.Reason == c.Reason && last.Message == c.Message {
			return
		}
	}
	l.seen = append(l.seen, *c)
}

func (l *conditionLog) fail(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, msg)
}

// Seen returns the versions seen so far, oldest first.
func (l *conditionLog) Seen() []metav1.Condition {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]metav1.Condition(nil), l.seen...)
}

// Errors returns what went wrong while watching (watch errors).
func (l *conditionLog) Errors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.errs...)
}

// String lists the versions seen, for failure messages and reports.
func (l *conditionLog) String() string {
	seen := l.Seen()
	if len(seen) == 0 {
		return "no " + l.condType + " condition seen"
	}
	parts := make([]string, len(seen))
	for i, c := range seen {
		parts[i] = fmt.Sprintf("%d. %s=%s %s: %s", i+1, c.Type, c.Status, c.Reason, c.Message)
	}
	return l.condType + " conditions seen:\n" + strings.Join(parts, "\n")
}
