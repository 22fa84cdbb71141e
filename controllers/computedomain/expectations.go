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
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// expectations are what the controller expects its informer cache to show after its own writes, the idea
// of the ControllerExpectations of Kubernetes' controllers: per domain, the status it last wrote, and the
// objects it created or found their names taken (getOrCreate). The cache lags behind the controller's writes: a
// reconcile that computed from a stale cached status would hand out node indices again and move them (the
// failure of NVIDIA's driver in its issue #1418).
//
// Unlike Kubernetes' expectations, which count creates and deletes until the informer has seen them, these
// hold the written state itself: the controller is the only writer of a domain's status, so what it wrote
// last is the truth. The status expectation stands for the cached status always. Expectations last
// as long as the process; after a restart the cache, synced before the first reconcile, is current.
type expectations struct {
	mu      sync.Mutex
	domains map[types.UID]*domainExpectations
}

// domainExpectations are one domain's expectations.
type domainExpectations struct {
	name   types.NamespacedName
	status *v1beta1.ComputeDomainStatus
	// written is when the status was last written.
	written time.Time
	// taken holds the objects the controller created for the domain in this process, or found their names
	// taken on the API server (by its own object or a foreign one), by objectKey. Until then a cache miss
	// means the name is most likely free: the cache holds every object the controller made (it synced before
	// the first reconcile). After, a miss may be the cache lagging behind the create, or an object the cache
	// does not hold, and the API server is asked before creating.
	taken map[string]bool
}

func newExpectations() *expectations {
	return &expectations{domains: map[types.UID]*domainExpectations{}}
}

func (e *expectations) entryLocked(cd *v1beta1.ComputeDomain) *domainExpectations {
	d, ok := e.domains[cd.UID]
	if !ok {
		d = &domainExpectations{name: types.NamespacedName{Namespace: cd.Namespace, Name: cd.Name}}
		e.domains[cd.UID] = d
	}
	return d
}

// domain returns a copy of the cached domain with its status replaced by the expected one, when the
// controller wrote one in this process.
func (e *expectations) domain(cached *v1beta1.ComputeDomain) *v1beta1.ComputeDomain {
	out := cached.DeepCopy()
	e.mu.Lock()
	defer e.mu.Unlock()
	if d, ok := e.domains[cached.UID]; ok && d.status != nil {
		out.Status = *d.status.DeepCopy()
	}
	return out
}

// expectStatus records the status of cd, which the API server accepted at now.
func (e *expectations) expectStatus(cd *v1beta1.ComputeDomain, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.entryLocked(cd)
	d.status = cd.Status.DeepCopy()
	d.written = now
}

// statusWriteWait is how long a status write of the domain must wait so that writes are at least interval
// apart (0: write now).
func (e *expectations) statusWriteWait(uid types.UID, now time.Time, interval time.Duration) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, ok := e.domains[uid]
	if !ok || d.written.IsZero() || interval <= 0 {
		return 0
	}
	return max(0, d.written.Add(interval).Sub(now))
}

// take records that obj's name was created or found taken on the API server for the domain.
func (e *expectations) take(cd *v1beta1.ComputeDomain, obj client.Object) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.entryLocked(cd)
	if d.taken == nil {
		d.taken = map[string]bool{}
	}
	d.taken[objectKey(obj)] = true
}

// isTaken says whether take was called for obj's name and the domain in this process.
func (e *expectations) isTaken(uid types.UID, obj client.Object) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, ok := e.domains[uid]
	return ok && d.taken[objectKey(obj)]
}

// objectKey names obj by its Go type (the controller's objects are typed), namespace and name.
func objectKey(obj client.Object) string {
	return fmt.Sprintf("%T %s/%s", obj, obj.GetNamespace(), obj.GetName())
}

// forget drops a deleted domain.
func (e *expectations) forget(uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.domains, uid)
}

// forgetNamed drops a domain that is gone, by name, whatever its UID was.
func (e *expectations) forgetNamed(name types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for uid, d := range e.domains {
		if d.name == name {
			delete(e.domains, uid)
		}
	}
}
