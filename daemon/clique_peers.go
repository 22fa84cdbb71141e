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
	"cmp"
	"slices"
)

// Peer is one node of this node's IMEX ensemble, as its clique's IMEXClique
// lists it.
type Peer struct {
	NodeName  string
	IPAddress string
	Index     int32
}

// EnsemblePeers returns the ensemble of node self from the nodes the
// controller lists in it (its clique's IMEXClique): those with a known
// address, self included (nvidia-imex expects its own address in the nodes
// file; it is added when the controller has not listed the node yet), ordered
// by index and name so the nodes file is stable. A node without a clique has
// no ensemble.
func EnsemblePeers(listed []Peer, self Peer, cliqueID string) []Peer {
	if cliqueID == "" {
		return nil
	}
	var peers []Peer
	seenSelf := false
	for _, n := range listed {
		if n.IPAddress == "" {
			continue
		}
		if n.NodeName == self.NodeName {
			seenSelf = true
			// Our own address is what we listen on, whatever status says.
			n.IPAddress = self.IPAddress
		}
		peers = append(peers, n)
	}
	if !seenSelf {
		peers = append(peers, Peer{NodeName: self.NodeName, IPAddress: self.IPAddress, Index: -1})
	}
	slices.SortFunc(peers, func(a, b Peer) int {
		return cmp.Or(cmp.Compare(a.Index, b.Index), cmp.Compare(a.NodeName, b.NodeName))
	})
	// Two nodes claiming one address (a stale entry after an IP change)
	// would make the nodes file invalid: the lower index wins.
	seen := map[string]bool{}
	out := peers[:0]
	for _, p := range peers {
		if !seen[p.IPAddress] {
			seen[p.IPAddress] = true
			out = append(out, p)
		}
	}
	return out
}

// Addresses returns the peers' addresses in order.
func Addresses(peers []Peer) []string {
	out := make([]string, len(peers))
	for i, p := range peers {
		out[i] = p.IPAddress
	}
	return out
}
