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

package draplugin

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/dynamic-resource-allocation/resourceslice"
)

func TestPublisherPublishesOnlyOnceSet(t *testing.T) {
	ctx := context.Background()
	pool := func(generation int) func() resourceslice.DriverResources {
		return func() resourceslice.DriverResources {
			return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{"node": {Generation: int64(generation)}}}
		}
	}
	var published []int64
	record := func(_ context.Context, r resourceslice.DriverResources) error {
		published = append(published, r.Pools["node"].Generation)
		return nil
	}
	var p Publisher
	if err := p.Publish(ctx, pool(1)); err != nil {
		t.Fatal(err)
	}
	if err := p.Set(ctx, record, pool(2)); err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(ctx, pool(3)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{2, 3}, published); diff != "" {
		t.Errorf("published pools (-want +got):\n%s", diff)
	}
}
