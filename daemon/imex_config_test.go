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
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/computedomain-operator/computedomain-operator/internal/imex"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata")

// checkRendered compares a rendered file with the golden file testdata/golden
// (rewritten with -update), or, when wantErr is set, the error with it.
func checkRendered(t *testing.T, got []byte, err error, golden, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || err.Error() != wantErr {
			t.Fatalf("error = %v, want %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", golden)
	if *updateGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

func TestRenderConfig(t *testing.T) {
	cases := map[string]struct {
		settings IMEXSettings
		golden   string
		wantErr  string
	}{
		"a GB200 node of a domain": {
			settings: IMEXSettings{ConfigDir: "/imex/cd-1234", IPAddress: "10.1.2.3", DomainID: "1234", DomainName: "train", DomainNamespace: "team-a", CliqueID: "c0ffee.1"},
			golden:   "config.cfg.golden",
		},
		"a relative config directory and a bad address are both named": {
			settings: IMEXSettings{ConfigDir: "imex", IPAddress: "node-1"},
			wantErr:  "render IMEX config: config directory \"imex\" must be an absolute path\nIP address \"node-1\" must be an IPv4 or IPv6 address",
		},
		"a domain name with a newline cannot inject keys": {
			settings: IMEXSettings{ConfigDir: "/imex", IPAddress: "10.0.0.1", DomainName: "x\nSERVER_PORT=1"},
			wantErr:  "render IMEX config: domain name \"x\\nSERVER_PORT=1\" must be a single line",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := RenderConfig(tc.settings)
			checkRendered(t, got, err, tc.golden, tc.wantErr)
		})
	}
}

// The rendered config reads back as package imex's contract says (what the
// stand-in runs with).
func TestRenderedConfigReadsBack(t *testing.T) {
	s := IMEXSettings{ConfigDir: "/imex/cd-1", IPAddress: "127.0.9.1"}
	raw, err := RenderConfig(s)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.cfg")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := imex.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	want := imex.Config{BindIP: "127.0.9.1", ServerPort: imex.ServerPort, CmdBindIP: "127.0.9.1", CmdPort: imex.CommandPort, NodesFile: "/imex/cd-1/nodes_config.cfg"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config read back (-want +got):\n%s", diff)
	}
}

func TestRenderNodes(t *testing.T) {
	cases := map[string]struct {
		addresses []string
		golden    string
		wantErr   string
	}{
		"three nodes of a clique in index order": {
			addresses: []string{"10.1.2.3", "10.1.2.4", "10.1.2.10"},
			golden:    "nodes_config.cfg.golden",
		},
		"no peers yet is an empty file": {
			addresses: nil,
			golden:    "nodes_config.empty.golden",
		},
		"a duplicate address is refused": {
			addresses: []string{"10.0.0.1", "10.0.0.1"},
			wantErr:   `render IMEX nodes file: peer address "10.0.0.1" listed twice`,
		},
		"a name is refused": {
			addresses: []string{"node-1"},
			wantErr:   `render IMEX nodes file: peer address "node-1" must be an IPv4 or IPv6 address`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := RenderNodes(tc.addresses)
			checkRendered(t, got, err, tc.golden, tc.wantErr)
		})
	}
}
