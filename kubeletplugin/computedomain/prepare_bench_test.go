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
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/utils/ptr"
)

// BenchmarkPrepareUnprepareChannelClaim measures one workload claim's
// prepare (domain ready, label already set, CDI spec and two checkpoint
// writes) plus its unprepare, on a fake host root. Reported: ns per
// prepare+unprepare pair.
func BenchmarkPrepareUnprepareChannelClaim(b *testing.B) {
	e := newNodeEnv(b, "gb200-nvl72")
	e.domains.set(domain("a", "team-a", uidA, e.clique, ptr.To[int32](4), testNode))
	d := e.driver()
	ctx := context.Background()
	// A first claim keeps the domain's label, so the loop measures the
	// steady state (no label writes).
	keep := channelClaim("keep", "team-a", "keep", 31, uidA, "")
	if res, _ := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{keep}); res[keep.UID].Err != nil {
		b.Fatal(res[keep.UID].Err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		claim := channelClaim("w", "team-a", types.UID(fmt.Sprintf("claim-%d", i)), 0, uidA, "")
		res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{claim})
		if err != nil || res[claim.UID].Err != nil {
			b.Fatal(err, res[claim.UID].Err)
		}
		un, err := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "w"}, UID: claim.UID}})
		if err != nil || un[claim.UID] != nil {
			b.Fatal(err, un[claim.UID])
		}
	}
}
