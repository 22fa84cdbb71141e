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

package imex

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// nvl72 is the most nodes one IMEX ensemble holds on an NVL72 rack.
const nvl72 = 18

func TestAssignIndices(t *testing.T) {
	cases := map[string]struct {
		nodes        []string
		previous     map[string]int32
		limit        int
		want         map[string]int32
		wantOverflow []string
	}{
		"new nodes take indices from 0 in name order": {
			nodes: []string{"n3", "n1", "n2"},
			limit: nvl72,
			want:  map[string]int32{"n1": 0, "n2": 1, "n3": 2},
		},
		"a node keeps its index when others join before it in name order": {
			nodes:    []string{"n5", "n1"},
			previous: map[string]int32{"n5": 0},
			limit:    nvl72,
			want:     map[string]int32{"n5": 0, "n1": 1},
		},
		"a new node takes the lowest index a departed node freed": {
			nodes:    []string{"n1", "n3", "n4"},
			previous: map[string]int32{"n1": 0, "n2": 1, "n3": 2},
			limit:    nvl72,
			want:     map[string]int32{"n1": 0, "n3": 2, "n4": 1},
		},
		"the 19th node of a clique gets no index and is reported as overflow": {
			nodes: testNodeNames(19),
			limit: nvl72,
			want: func() map[string]int32 {
				m := map[string]int32{}
				for i, n := range testNodeNames(18) {
					m[n] = int32(i)
				}
				return m
			}(),
			wantOverflow: []string{"n18"},
		},
		"an overflow node joins once a member leaves a full clique": {
			nodes: append(testNodeNames(18)[1:], "n18"),
			previous: func() map[string]int32 {
				m := map[string]int32{}
				for i, n := range testNodeNames(18) {
					m[n] = int32(i)
				}
				return m
			}(),
			limit: nvl72,
			want: func() map[string]int32 {
				m := map[string]int32{"n18": 0}
				for i, n := range testNodeNames(18)[1:] {
					m[n] = int32(i + 1)
				}
				return m
			}(),
		},
		"a previous index beyond the limit or claimed twice is reassigned": {
			nodes:    []string{"a", "b", "c"},
			previous: map[string]int32{"a": 1, "b": 1, "c": 40},
			limit:    nvl72,
			want:     map[string]int32{"a": 1, "b": 0, "c": 2},
		},
		"no limit for nodes without a fabric": {
			nodes: testNodeNames(20),
			limit: 0,
			want: func() map[string]int32 {
				m := map[string]int32{}
				for i, n := range testNodeNames(20) {
					m[n] = int32(i)
				}
				return m
			}(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, overflow := AssignIndices(tc.nodes, tc.previous, tc.limit)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("indices (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantOverflow, overflow, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("overflow (-want +got):\n%s", diff)
			}
		})
	}
}

// testNodeNames returns n00..n<count-1>, zero-padded so that name order is numeric order.
func testNodeNames(count int) []string {
	out := make([]string, count)
	for i := range out {
		out[i] = "n" + string(rune('0'+i/10)) + string(rune('0'+i%10))
	}
	return out
}
