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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// conditionLog is every distinct version (status, reason, message) of one
// condition type that a watch saw on one object, in the order it saw them.
// A spec that starts it before an action and reads it afterwards catches a
// condition that was set and cleared between two polls.
type conditionLog struct {
	condType string
	mu       sync.Mutex
	seen     []metav1.Condition
	errs     []string
}

// watchCondition starts logging condType of the named object from its
// current version on; the watch ends with the spec. The watch is a
// RetryWatcher: a connection the server closes is resumed from the last
// resource version, so no version in between is missed.
func watchCondition(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, name, condType string) *conditionLog {
	GinkgoHelper()
	log := &conditionLog{condType: condType}
	resource := dyn.Resource(gvr).Namespace(ns)
	obj, err := resource.Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred(), "read %s %s/%s before watching it", gvr.Resource, ns, name)
	log.record(obj)

	wctx, cancel := context.WithCancel(context.Background())
	rw, err := watchtools.NewRetryWatcherWithContext(wctx, obj.GetResourceVersion(), &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = "metadata.name=" + name
			return resource.Watch(ctx, opts)
		},
	})
	if err != nil {
		cancel()
		Expect(err).NotTo(HaveOccurred(), "watch %s %s/%s", gvr.Resource, ns, name)
	}
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		for ev := range rw.ResultChan() {
			switch ev.Type {
			case watch.Added, watch.Modified:
				if u, ok := ev.Object.(*unstructured.Unstructured); ok {
					log.record(u)
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

// record appends the object's condition when it differs from the last one seen.
func (l *conditionLog) record(obj *unstructured.Unstructured) {
	c, err := conditionOf(obj, l.condType)
	if err != nil {
		l.fail(err.Error())
		return
	}
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

// Errors returns what went wrong while watching (watch errors, unreadable conditions).
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

// conditionOf returns the condition of type condType in the object's
// status.conditions, or nil when it has none.
func conditionOf(obj *unstructured.Unstructured, condType string) (*metav1.Condition, error) {
	raw, _, err := unstructured.NestedSlice(obj.Object, "status", "conditions")
	if err != nil {
		return nil, fmt.Errorf("%s %s: status.conditions: %w", obj.GetKind(), obj.GetName(), err)
	}
	conds := make([]metav1.Condition, 0, len(raw))
	for i, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s %s: status.conditions[%d] is a %T, not an object", obj.GetKind(), obj.GetName(), i, r)
		}
		var c metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err != nil {
			return nil, fmt.Errorf("%s %s: status.conditions[%d]: %w", obj.GetKind(), obj.GetName(), i, err)
		}
		conds = append(conds, c)
	}
	return meta.FindStatusCondition(conds, condType), nil
}
