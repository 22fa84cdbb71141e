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
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEnsemblePeers(t *testing.T) {
	self := Peer{NodeName: "n1", IPAddress: "10.0.0.1"}
	node := func(name, ip string, index int32) Peer {
		return Peer{NodeName: name, IPAddress: ip, Index: index}
	}
	cases := map[string]struct {
		nodes  []Peer
		clique string
		want   []string
	}{
		"the ensemble's nodes by index, self included": {
			nodes:  []Peer{node("n3", "10.0.0.3", 2), node("n1", "10.0.0.1", 0), node("n2", "10.0.0.2", 1)},
			clique: "c.1",
			want:   []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"},
		},
		"self before the controller lists it": {
			nodes:  []Peer{node("n2", "10.0.0.2", 0)},
			clique: "c.1",
			want:   []string{"10.0.0.1", "10.0.0.2"},
		},
		"a node without an address yet is left out": {
			nodes:  []Peer{node("n1", "10.0.0.1", 0), node("n2", "", 1)},
			clique: "c.1",
			want:   []string{"10.0.0.1"},
		},
		"a stale entry holding another node's address: the lower index wins": {
			nodes:  []Peer{node("n1", "10.0.0.1", 0), node("old", "10.0.0.2", 2), node("n2", "10.0.0.2", 1)},
			clique: "c.1",
			want:   []string{"10.0.0.1", "10.0.0.2"},
		},
		"no clique, no ensemble": {
			nodes: []Peer{node("n1", "10.0.0.1", 0)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Addresses(EnsemblePeers(tc.nodes, self, tc.clique))
			if len(got) == 0 {
				got = nil
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("peers (-want +got):\n%s", diff)
			}
		})
	}
}
