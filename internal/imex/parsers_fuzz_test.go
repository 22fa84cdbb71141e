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
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseConfig: any config text either parses into ports in range and the nodes file, or is refused with
// an error; nothing panics.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		"SERVER_NET_INTERFACE=\nIMEX_NODE_CONFIG_FILE=/imex/nodes_config.cfg\n",
		"# comment\nSERVER_PORT=50000\nIMEX_CMD_PORT=50005\nIMEX_CMD_BIND_INTERFACE_IP=127.0.9.1\nSERVER_BIND_IP=127.0.9.1\nIMEX_NODE_CONFIG_FILE=/n\n",
		"SERVER_PORT=70000\n", "IMEX_CMD_PORT=-1\n", "SERVER_BIND_IP=not-an-ip\n", "no equals sign\n", "=\n", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		cfg, err := ParseConfig(strings.NewReader(text))
		if err != nil {
			return
		}
		for _, p := range []int{cfg.ServerPort, cfg.CmdPort} {
			if p < 1 || p > 65535 {
				t.Errorf("accepted port %d", p)
			}
		}
		_, _ = cfg.PeerAddress(), cfg.CmdAddress()
	})
}

// FuzzParsePeerTable: a parsed table has only known states and no empty address.
func FuzzParsePeerTable(f *testing.F) {
	for _, seed := range []string{"10.0.0.1 CONNECTED\n10.0.0.2 DISCONNECTED\n", "\n\n", "10.0.0.1 MAYBE", "CONNECTED", " 10.0.0.1  CONNECTED "} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		peers, err := ParsePeerTable(text)
		if err != nil {
			return
		}
		for _, p := range peers {
			if p.State != PeerConnected && p.State != PeerDisconnected {
				t.Errorf("accepted state %q", p.State)
			}
		}
		_ = PeerMap(peers)
	})
}

// FuzzReadNodesFile: the peer list has no blank entry, no comment and no duplicate.
func FuzzReadNodesFile(f *testing.F) {
	for _, seed := range []string{"10.0.0.1\n10.0.0.2\n", "# c\n\n10.0.0.1\n10.0.0.1\n", "", "\r\n"} {
		f.Add(seed)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, text string) {
		path := filepath.Join(dir, "nodes_config.cfg")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		addrs, err := ReadNodesFile(path)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, a := range addrs {
			if a == "" || strings.HasPrefix(a, "#") || seen[a] {
				t.Errorf("nodes file entry %q (seen before: %v)", a, seen[a])
			}
			seen[a] = true
		}
	})
}
