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

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// DomainWatch keeps the latest version of one ComputeDomain from a watch on
// that object alone. It follows the domain by UID: a domain of the same name
// with another UID (the domain deleted and created anew) is not this
// daemon's and reads as absent, so a lingering daemon of a deleted domain
// never joins the new one.
type DomainWatch struct {
	*objectWatch[*v1beta1.ComputeDomain, *v1beta1.ComputeDomainList]
}

// NewDomainWatch returns a watch of the domain key with uid; Run starts it.
func NewDomainWatch(c client.WithWatch, key client.ObjectKey, uid types.UID) *DomainWatch {
	return &DomainWatch{newObjectWatch(c, key, "ComputeDomain",
		func() *v1beta1.ComputeDomain { return &v1beta1.ComputeDomain{} },
		func() *v1beta1.ComputeDomainList { return &v1beta1.ComputeDomainList{} },
		func(cd *v1beta1.ComputeDomain) bool { return cd.UID == uid })}
}

// Get returns the latest domain (nil when it does not exist or was not read
// yet). It is a DomainGetter.
func (w *DomainWatch) Get(context.Context) (*v1beta1.ComputeDomain, error) {
	cd, ok := w.get()
	if !ok {
		return nil, nil
	}
	return cd, nil
}
