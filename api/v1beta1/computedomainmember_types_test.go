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

package v1beta1

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func TestComputeDomainMemberName(t *testing.T) {
	long := strings.Repeat("n", 260)
	cases := map[string]struct {
		node    string
		uid     types.UID
		want    string
		wantLen int
	}{
		"a short node name keeps its name and the whole uid": {
			node: "gb200-r1-n3",
			uid:  "0f3c9a7e-1111-2222-3333-444455556666",
			want: "gb200-r1-n3-0f3c9a7e-1111-2222-3333-444455556666",
		},
		"a node name too long for a name is shortened with a hash and still ends in the uid": {
			node:    long,
			uid:     "0f3c9a7e-1111-2222-3333-444455556666",
			wantLen: 253,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ComputeDomainMemberName(tc.node, tc.uid)
			if tc.want != "" {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("name (-want +got):\n%s", diff)
				}
				return
			}
			if len(got) != tc.wantLen || !strings.HasSuffix(got, "-"+string(tc.uid)) {
				t.Errorf("name %q (len %d): want len %d ending in -%s", got, len(got), tc.wantLen, tc.uid)
			}
			if other := ComputeDomainMemberName(long[:259]+"m", tc.uid); other == got {
				t.Errorf("two long node names that differ map to the same member name %q", got)
			}
		})
	}
}

// TestComputeDomainMemberNamesOfTwoDomainsDiffer: two domains whose UIDs share their first characters get
// different records on one node (the 8-character prefix used before made them collide).
func TestComputeDomainMemberNamesOfTwoDomainsDiffer(t *testing.T) {
	a := ComputeDomainMemberName("gb200-r1-n3", "0f3c9a7e-1111-2222-3333-444455556666")
	b := ComputeDomainMemberName("gb200-r1-n3", "0f3c9a7e-9999-2222-3333-444455556666")
	if a == b {
		t.Errorf("domains 0f3c9a7e-1111-… and 0f3c9a7e-9999-… share the member name %q on one node", a)
	}
}
