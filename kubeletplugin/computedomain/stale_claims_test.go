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
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// apiClaims is the API's ResourceClaims by namespace/name, holding their UIDs.
type apiClaims map[string]types.UID

func (a apiClaims) GetResourceClaim(_ context.Context, namespace, name string) (*resourceapi.ResourceClaim, error) {
	uid, ok := a[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaims"}, name)
	}
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: uid}}, nil
}

func TestCleanupStaleClaims(t *testing.T) {
	cases := map[string]struct {
		api        apiClaims
		wantClaims []string
	}{
		"a claim still in the API stays prepared": {
			api:        apiClaims{"team-a/w": "claim-1"},
			wantClaims: []string{"claim-1"},
		},
		"a deleted claim is unprepared": {
			api: apiClaims{},
		},
		"a claim recreated under the same name is a different claim": {
			api: apiClaims{"team-a/w": "claim-2"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newNodeEnv(t, "gb200-nvl72")
			e.domains.set(domain("a", "team-a", uidA, e.clique, ptr.To[int32](4), testNode))
			d := e.driver()
			d.claims = tc.api
			if res := prepare(t, d, channelClaim("w", "team-a", "claim-1", 0, uidA, "")); res.Err != nil {
				t.Fatal(res.Err)
			}
			if err := d.CleanupStaleClaims(e.ctx()); err != nil {
				t.Fatal(err)
			}
			var got []string
			for uid := range d.state.ledger.Claims() {
				got = append(got, uid)
			}
			if diff := cmp.Diff(tc.wantClaims, got); diff != "" {
				t.Errorf("checkpointed claims (-want +got):\n%s", diff)
			}
			specs, err := d.state.cdi.ClaimUIDs()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantClaims, specs); diff != "" {
				t.Errorf("CDI specs (-want +got):\n%s", diff)
			}
		})
	}
}
