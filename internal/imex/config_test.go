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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseConfig(t *testing.T) {
	cases := map[string]struct {
		text    string
		want    Config
		wantErr string
	}{
		"a full config with comments and keys Config does not read": {
			text: "# nvidia-imex\nLOG_LEVEL=4\nSERVER_BIND_IP=127.0.3.4\nSERVER_PORT=50000\nIMEX_CMD_BIND_INTERFACE_IP=127.0.3.4\nIMEX_CMD_PORT=50005\nIMEX_NODE_CONFIG_FILE=/etc/nvidia-imex/nodes_config.cfg\n",
			want: Config{BindIP: "127.0.3.4", ServerPort: 50000, CmdBindIP: "127.0.3.4", CmdPort: 50005, NodesFile: "/etc/nvidia-imex/nodes_config.cfg"},
		},
		"ports default to 50000 and 50005, empty bind addresses mean any": {
			text: "SERVER_BIND_IP=\nIMEX_NODE_CONFIG_FILE=/n\n",
			want: Config{ServerPort: 50000, CmdPort: 50005, NodesFile: "/n"},
		},
		"no nodes file is refused": {
			text:    "SERVER_PORT=50000\n",
			wantErr: "IMEX_NODE_CONFIG_FILE must name the nodes file",
		},
		"a bad port names the key and the range": {
			text:    "SERVER_PORT=70000\nIMEX_NODE_CONFIG_FILE=/n\n",
			wantErr: `line 1: SERVER_PORT="70000": must be a port number 1-65535`,
		},
		"a bind address that is no IP is refused": {
			text:    "SERVER_BIND_IP=node-1\nIMEX_NODE_CONFIG_FILE=/n\n",
			wantErr: `line 1: SERVER_BIND_IP="node-1": must be an IP address or empty`,
		},
		"a line without = is refused": {
			text:    "IMEX_NODE_CONFIG_FILE=/n\ngarbage\n",
			wantErr: `line 2: "garbage" is not key=value`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseConfig(strings.NewReader(tc.text))
			if checkErr(t, err, tc.wantErr) {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

// checkErr fails the test unless err is what the case wants: no error when
// want is empty, else an error with exactly the message want. It reports
// whether the case ends there (it wanted an error and got it).
func checkErr(t *testing.T, err error, want string) bool {
	t.Helper()
	if want != "" {
		if err == nil || err.Error() != want {
			t.Fatalf("error = %v, want %q", err, want)
		}
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false
}
