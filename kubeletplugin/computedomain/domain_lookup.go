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

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// DomainLookup finds ComputeDomains by UID (from a local cache: prepare must
// not cost API reads).
type DomainLookup interface {
	// DomainByUID returns the domain, or nil when none with that UID exists.
	DomainByUID(ctx context.Context, uid types.UID) (*apiv1beta1.ComputeDomain, error)
}

// DomainUIDIndex is the field index CachedDomains needs on ComputeDomains.
const DomainUIDIndex = "metadata.uid"

// IndexDomainUID is the indexer function for DomainUIDIndex.
func IndexDomainUID(o client.Object) []string { return []string{string(o.GetUID())} }

// CachedDomains looks domains up in a controller-runtime cache that has the
// DomainUIDIndex.
type CachedDomains struct {
	Reader client.Reader
}

// DomainByUID implements DomainLookup.
func (c CachedDomains) DomainByUID(ctx context.Context, uid types.UID) (*apiv1beta1.ComputeDomain, error) {
	var list apiv1beta1.ComputeDomainList
	if err := c.Reader.List(ctx, &list, client.MatchingFields{DomainUIDIndex: string(uid)}); err != nil {
		return nil, fmt.Errorf("look up ComputeDomain %s: %w", uid, err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	return &list.Items[0], nil
}
