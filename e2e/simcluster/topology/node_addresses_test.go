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
)

func TestNodeIP(t *testing.T) {
	cases := map[string]struct {
		base, index int
		want        string
		wantErr     string
	}{
		"the first node of base 0 is 127.0.1.1":   {base: 0, index: 0, want: "127.0.1.1"},
		"the 250th node ends the first octet":     {base: 0, index: 249, want: "127.0.1.250"},
		"the 251st node starts the next octet":    {base: 0, index: 250, want: "127.0.2.1"},
		"a base shifts the third octet":           {base: 7, index: 0, want: "127.0.8.1"},
		"a base and a large index add up":         {base: 7, index: 501, want: "127.0.10.2"},
		"the last block ends at 127.0.255.250":    {base: 254, index: 249, want: "127.0.255.250"},
		"a node past 127.0.255.x is refused":      {base: 254, index: 250, wantErr: "A up to 256, beyond 255"},
		"a base beyond the last octet is refused": {base: 255, index: 0, wantErr: "the base must be at most 254"},
		"a negative base is refused":              {base: -1, index: 0, wantErr: "address base -1: must be >= 0"},
		"a negative index is refused":             {base: 0, index: -1, wantErr: "node index -1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := NodeIP(tc.base, tc.index)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("NodeIP(%d, %d) = %q, %v; want an error containing %q", tc.base, tc.index, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("NodeIP(%d, %d) = %q, %v; want %q", tc.base, tc.index, got, err, tc.want)
			}
		})
	}
}

func TestNodesUseTheAddressBase(t *testing.T) {
	topo := Topology{Profile: "gb200-nvl72", Extra: []NodePool{{Profile: "hgx-h100-8", Count: 251}}}
	if got := topo.AddressOctets(); got != 2 {
		t.Fatalf("AddressOctets() of 251 nodes = %d, want 2", got)
	}
	nodes, err := topo.Nodes(3)
	if err != nil {
		t.Fatal(err)
	}
	if first, last := nodes[0].IP, nodes[250].IP; first != "127.0.4.1" || last != "127.0.5.1" {
		t.Errorf("node IPs with base 3 run %s..%s, want 127.0.4.1..127.0.5.1", first, last)
	}
}

func TestNodesRefuseABlockPast255(t *testing.T) {
	topo := Topology{Profile: "gb200-nvl72", Extra: []NodePool{{Profile: "hgx-h100-8", Count: 251}}}
	if _, err := topo.Nodes(253); err != nil {
		t.Fatalf("Nodes(253) for 2 octets (254, 255) error = %v, want none", err)
	}
	_, err := topo.Nodes(254)
	want := "the 251 nodes of the topology: address base 254: node IPs 127.0.A.B would need A up to 256, beyond 255; the base must be at most 253"
	if err == nil || err.Error() != want {
		t.Fatalf("Nodes(254) error = %v, want %q", err, want)
	}
}
