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
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/computedomain-operator/computedomain-operator/internal/imex"
)

// fakeCtl writes a query tool that answers -q with READY and -N with a table
// that is not the stand-in's, as nvidia-imex-ctl does, and logs its calls.
func fakeCtl(t *testing.T, qAnswer string) (ctl, calls string) {
	t.Helper()
	dir := t.TempDir()
	ctl, calls = filepath.Join(dir, "nvidia-imex-ctl"), filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho \"$1\" >> " + calls + "\ncase \"$1\" in\n-q) echo " + qAnswer + " ;;\n-N) printf 'Nodes:\\nNode #0 - 10.0.0.1 - READY\\n' ;;\nesac\n"
	if err := os.WriteFile(ctl, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return ctl, calls
}

func TestCtlProber(t *testing.T) {
	cases := map[string]struct {
		answer    string
		wantState imex.State
		wantCalls []string
	}{
		"nvidia-imex-ctl says READY: peers unknown, and -N is not asked again": {
			answer:    "READY",
			wantState: imex.State{Ready: true},
			wantCalls: []string{"-q", "-N", "-q"},
		},
		"anything but READY is not ready, and peers are not asked": {
			answer:    "UNAVAILABLE",
			wantState: imex.State{},
			wantCalls: []string{"-q", "-q"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctl, calls := fakeCtl(t, tc.answer)
			p := NewCtlProber(ctl, "/etc/nvidia-imex/config.cfg", nil)
			for range 2 {
				st, err := p.Probe(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.wantState, st); diff != "" {
					t.Errorf("state (-want +got):\n%s", diff)
				}
			}
			raw, err := os.ReadFile(calls)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantCalls, strings.Fields(string(raw))); diff != "" {
				t.Errorf("tool calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCtlProberWithoutATool(t *testing.T) {
	p := NewCtlProber(filepath.Join(t.TempDir(), "missing"), "/c", nil)
	if _, err := p.Probe(context.Background()); err == nil {
		t.Error("a query tool that cannot run is not an error")
	}
}
