package computedomain

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// writtenStatuses remembers, per domain, the last status and the last DaemonSet placement the controller
// wrote. The controller is the only writer of both, so what it wrote last is the truth, while the informer
// cache can lag behind its own writes: a reconcile that computed from a stale cached status would hand out
// node indices again and move them (the failure of NVIDIA's driver in its issue #1418), and one that
// compared against a stale DaemonSet would write the same node list twice. Writes are remembered only for
// the life of the process; after a restart the cache, synced before the first reconcile, is current.
type writtenStatuses struct {
	mu     sync.Mutex
	writes map[types.UID]*lastWrites
}

type lastWrites struct {
	name      types.NamespacedName
	status    *v1beta1.ComputeDomainStatus
	daemonSet *writtenDaemonSet
}

// writtenDaemonSet is the controller's last write to a domain's DaemonSet.
type writtenDaemonSet struct {
	// uid is the DaemonSet's UID; generation the generation that write produced.
	uid        types.UID
	generation int64
	// deleted: the write deleted the DaemonSet; nodes: else, the nodes it selects.
	deleted bool
	nodes   []string
}

func newWrittenStatuses() *writtenStatuses {
	return &writtenStatuses{writes: map[types.UID]*lastWrites{}}
}

func (w *writtenStatuses) entry(cd *v1beta1.ComputeDomain) *lastWrites {
	e, ok := w.writes[cd.UID]
	if !ok {
		e = &lastWrites{name: types.NamespacedName{Namespace: cd.Namespace, Name: cd.Name}}
		w.writes[cd.UID] = e
	}
	return e
}

// current returns a copy of the domain with its status replaced by the last one written, when the
// controller wrote one in this process.
func (w *writtenStatuses) current(cd *v1beta1.ComputeDomain) *v1beta1.ComputeDomain {
	out := cd.DeepCopy()
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.writes[cd.UID]; ok && e.status != nil {
		out.Status = *e.status.DeepCopy()
	}
	return out
}

// remember records the status of cd, which the API server accepted.
func (w *writtenStatuses) remember(cd *v1beta1.ComputeDomain) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.entry(cd).status = cd.Status.DeepCopy()
}

// daemonSet returns the controller's last write to the domain's DaemonSet in this process.
func (w *writtenStatuses) daemonSet(uid types.UID) (writtenDaemonSet, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.writes[uid]; ok && e.daemonSet != nil {
		return *e.daemonSet, true
	}
	return writtenDaemonSet{}, false
}

// rememberDaemonSet records a write to the domain's DaemonSet that the API server accepted.
func (w *writtenStatuses) rememberDaemonSet(cd *v1beta1.ComputeDomain, ds writtenDaemonSet) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ds.nodes = slices.Clone(ds.nodes)
	w.entry(cd).daemonSet = &ds
}

// forget drops a deleted domain.
func (w *writtenStatuses) forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.writes, uid)
}

// forgetNamed drops a domain that is gone, by name, whatever its UID was.
func (w *writtenStatuses) forgetNamed(name types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for uid, e := range w.writes {
		if e.name == name {
			delete(w.writes, uid)
		}
	}
}
