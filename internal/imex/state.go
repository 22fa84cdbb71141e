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
	"fmt"
	"slices"
	"strings"
)

// Answers of the query tool: `nvidia-imex-ctl -q -c <config>` prints
// AnswerReady once the local IMEX daemon is ready; anything else, or a tool
// that fails, means not ready.
const (
	AnswerReady = "READY"
	// AnswerNotReady is what the stand-in's query tool prints when its daemon
	// is not (or no longer) listening, or does not answer.
	AnswerNotReady = "NOT_READY"
)

// PeerState says whether the IMEX daemon holds a working connection to a peer.
type PeerState string

const (
	// PeerConnected: the peer answered the handshake and the connection is open.
	PeerConnected PeerState = "CONNECTED"
	// PeerDisconnected: no working connection (never made, or lost).
	PeerDisconnected PeerState = "DISCONNECTED"
)

// PeerStatus is one peer of the nodes file.
type PeerStatus struct {
	Address string
	State   PeerState
}

// ParsePeerTable parses the peer table the stand-in's `-N` prints: one
// "<address> CONNECTED|DISCONNECTED" line per peer, blank lines skipped.
// nvidia-imex-ctl's node table is another format and does not parse.
func ParsePeerTable(text string) ([]PeerStatus, error) {
	var peers []PeerStatus
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		addr, state, ok := strings.Cut(line, " ")
		st := PeerState(state)
		if !ok || (st != PeerConnected && st != PeerDisconnected) {
			return nil, fmt.Errorf("peer line %q: want \"<address> %s|%s\"", line, PeerConnected, PeerDisconnected)
		}
		peers = append(peers, PeerStatus{Address: addr, State: st})
	}
	return peers, nil
}

// State is what the local IMEX daemon says about itself.
type State struct {
	// Ready is true when the query answered READY.
	Ready bool
	// Peers maps peer addresses to their connection state; nil when the IMEX
	// build does not tell (nvidia-imex-ctl's node table is not parsed).
	Peers map[string]PeerState
}

// PeerMap is the peer table as State.Peers.
func PeerMap(peers []PeerStatus) map[string]PeerState {
	m := make(map[string]PeerState, len(peers))
	for _, p := range peers {
		m[p.Address] = p.State
	}
	return m
}

// MissingPeers returns the addresses of expected peers (self excluded) that
// IMEX does not report connected, sorted. With no peer information (real
// nvidia-imex) nothing is reported missing: READY is all we can know.
func (s State) MissingPeers(self string, expected []string) []string {
	if s.Peers == nil {
		return nil
	}
	var missing []string
	for _, a := range expected {
		if a != self && s.Peers[a] != PeerConnected {
			missing = append(missing, a)
		}
	}
	slices.Sort(missing)
	return missing
}
