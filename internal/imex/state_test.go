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
)

func TestParsePeerTable(t *testing.T) {
	cases := map[string]struct {
		text    string
		want    []PeerStatus
		wantErr string
	}{
		"the stand-in's -N table, blank lines skipped": {
			text: "127.0.1.2 CONNECTED\n\n  127.0.1.3 DISCONNECTED  \n",
			want: []PeerStatus{{Address: "127.0.1.2", State: PeerConnected}, {Address: "127.0.1.3", State: PeerDisconnected}},
		},
		"no peers is an empty table": {
			text: "",
		},
		"nvidia-imex-ctl's node table is not a peer table": {
			text:    "Nodes:\nNode #0 - 10.0.0.1 - READY\n",
			wantErr: `peer line "Nodes:": want "<address> CONNECTED|DISCONNECTED"`,
		},
		"an unknown state is refused": {
			text:    "127.0.1.2 CONNECTING\n",
			wantErr: `peer line "127.0.1.2 CONNECTING": want "<address> CONNECTED|DISCONNECTED"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParsePeerTable(tc.text)
			if checkErr(t, err, tc.wantErr) {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("peers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMissingPeers(t *testing.T) {
	cases := map[string]struct {
		state State
		want  []string
	}{
		"real nvidia-imex tells no peers: nothing is missing": {
			state: State{Ready: true},
		},
		"a disconnected and an unknown peer are missing, self is not": {
			state: State{Ready: true, Peers: map[string]PeerState{"10.0.0.2": PeerConnected, "10.0.0.3": PeerDisconnected}},
			want:  []string{"10.0.0.3", "10.0.0.4"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.state.MissingPeers("10.0.0.1", []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
		})
	}
}
