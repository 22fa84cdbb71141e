package computedomain

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// writtenStatuses remembers the last status the controller wrote for each domain. The controller is the
// status's only writer, so what it wrote last is the truth, while the informer cache can lag behind its
// own writes: a reconcile that computed from a stale cached status would hand out node indices again and
// move them (the failure of NVIDIA's driver in its issue #1418). Statuses are remembered only for the life
// of the process; after a restart the cache, synced before the first reconcile, is current.
type writtenStatuses struct {
	mu       sync.Mutex
	statuses map[types.UID]writtenStatus
}

type writtenStatus struct {
	name   types.NamespacedName
	status v1beta1.ComputeDomainStatus
}

func newWrittenStatuses() *writtenStatuses {
	return &writtenStatuses{statuses: map[types.UID]writtenStatus{}}
}

// current returns a copy of the domain with its status replaced by the last one written, when the
// controller wrote one in this process.
func (w *writtenStatuses) current(cd *v1beta1.ComputeDomain) *v1beta1.ComputeDomain {
	out := cd.DeepCopy()
	w.mu.Lock()
	defer w.mu.Unlock()
	if s, ok := w.statuses[cd.UID]; ok {
		out.Status = *s.status.DeepCopy()
	}
	return out
}

// remember records the status of cd, which the API server accepted.
func (w *writtenStatuses) remember(cd *v1beta1.ComputeDomain) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.statuses[cd.UID] = writtenStatus{
		name:   types.NamespacedName{Namespace: cd.Namespace, Name: cd.Name},
		status: *cd.Status.DeepCopy(),
	}
}

// forget drops a deleted domain.
func (w *writtenStatuses) forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.statuses, uid)
}

// forgetNamed drops a domain that is gone, by name, whatever its UID was.
func (w *writtenStatuses) forgetNamed(name types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for uid, s := range w.statuses {
		if s.name == name {
			delete(w.statuses, uid)
		}
	}
}
