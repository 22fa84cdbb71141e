package imexstandin

import (
	"os"
	"path/filepath"
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
		"a full config with comments and keys the stand-in does not use": {
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
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadNodesFile(t *testing.T) {
	cases := map[string]struct {
		content *string
		want    []string
	}{
		"a missing file is no peers": {},
		"comments, blanks and duplicates are skipped, order kept": {
			content: new("# peers\n127.0.1.2\n\n127.0.1.1\n127.0.1.2\n  127.0.1.3  \n"),
			want:    []string{"127.0.1.2", "127.0.1.1", "127.0.1.3"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "nodes.cfg")
			if tc.content != nil {
				if err := os.WriteFile(path, []byte(*tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ReadNodesFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("peers (-want +got):\n%s", diff)
			}
		})
	}
}
