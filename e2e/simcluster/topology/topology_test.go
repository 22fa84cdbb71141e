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

package topology

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseNodePools(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    []NodePool
		wantErr string
	}{
		"empty means no extra nodes": {in: ""},
		"two pools keep their order": {
			in:   "hgx-h100-8:4,a100-40gb-mig:2",
			want: []NodePool{{Profile: "hgx-h100-8", Count: 4}, {Profile: "a100-40gb-mig", Count: 2}},
		},
		"an unknown profile names the allowed ones": {
			in: "h200:1", wantErr: "allowed values are a100-40gb-mig, gb200-nvl72, hgx-h100-8",
		},
		"a missing count is explained": {in: "hgx-h100-8", wantErr: "want <profile>:<count>"},
		"a zero count is refused":      {in: "hgx-h100-8:0", wantErr: "count must be a positive integer"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseNodePools(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseNodePools(%q) error = %v, want it to contain %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseNodePools(%q) error = %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseNodePools(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

type nodeSummary struct {
	Name, Profile, IP, Clique string
	Rack                      int
}

func TestTopologyNodes(t *testing.T) {
	clique0, err := mockCliqueID("gb200-nvl72", "any", 0)
	if err != nil {
		t.Fatal(err)
	}
	clique1, err := mockCliqueID("gb200-nvl72", "other", 1)
	if err != nil {
		t.Fatal(err)
	}
	if clique0 == "" || clique0 == clique1 {
		t.Fatalf("racks 0 and 1 report cliques %q and %q, want two different ones", clique0, clique1)
	}
	cases := map[string]struct {
		topo Topology
		want []nodeSummary
	}{
		"racks share a clique per rack, extra nodes have none": {
			topo: Topology{Profile: "gb200-nvl72", Racks: 2, NodesPerRack: 2, Extra: []NodePool{{Profile: "hgx-h100-8", Count: 1}}},
			want: []nodeSummary{
				{"gb200-r0-n00", "gb200-nvl72", "127.0.1.1", clique0, 0},
				{"gb200-r0-n01", "gb200-nvl72", "127.0.1.2", clique0, 0},
				{"gb200-r1-n00", "gb200-nvl72", "127.0.1.3", clique1, 1},
				{"gb200-r1-n01", "gb200-nvl72", "127.0.1.4", clique1, 1},
				{"h100-0", "hgx-h100-8", "127.0.1.5", "", -1},
			},
		},
		"two pools of one profile get distinct names": {
			topo: Topology{Profile: "gb200-nvl72", Extra: []NodePool{{Profile: "a100-40gb-mig", Count: 1}, {Profile: "a100-40gb-mig", Count: 1}}},
			want: []nodeSummary{
				{"a100-0", "a100-40gb-mig", "127.0.1.1", "", -1},
				{"a100-1", "a100-40gb-mig", "127.0.1.2", "", -1},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nodes, err := tc.topo.Nodes(0)
			if err != nil {
				t.Fatal(err)
			}
			var got []nodeSummary
			for _, n := range nodes {
				got = append(got, nodeSummary{n.Name, n.Profile.Name, n.IP, n.Labels[CliqueLabel], n.Rack})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Nodes() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTopologyIPsStayUniqueBeyond250Nodes(t *testing.T) {
	nodes, err := Topology{Profile: "gb200-nvl72", Extra: []NodePool{{Profile: "hgx-h100-8", Count: 600}}}.Nodes(0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, n := range nodes {
		if other, ok := seen[n.IP]; ok {
			t.Fatalf("nodes %s and %s share IP %s", other, n.Name, n.IP)
		}
		seen[n.IP] = n.Name
	}
	if got := nodes[250].IP; got != "127.0.2.1" {
		t.Errorf("node 251 IP = %s, want 127.0.2.1", got)
	}
}

func TestTopologyValidate(t *testing.T) {
	cases := map[string]struct {
		topo    Topology
		wantErr string
	}{
		"the default GB200 shape is valid": {topo: Topology{Profile: "gb200-nvl72", Racks: 2, NodesPerRack: 18}},
		"an NVL72 rack holds at most 18 nodes": {
			topo: Topology{Profile: "gb200-nvl72", Racks: 1, NodesPerRack: 19}, wantErr: "exceeds 18",
		},
		"an unknown rack profile names the allowed ones": {
			topo: Topology{Profile: "tpu", Racks: 1, NodesPerRack: 1}, wantErr: "allowed values are",
		},
		"a cluster needs nodes": {topo: Topology{Profile: "gb200-nvl72"}, wantErr: "no nodes"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.topo.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() error = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate() error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}
