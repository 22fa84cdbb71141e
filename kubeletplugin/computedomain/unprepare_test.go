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

package computedomain

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
)

func TestUnprepare(t *testing.T) {
	cases := map[string]struct {
		// claims are prepared in order; unprepared lists those unprepared.
		claims      []string
		unprepared  []string
		deleteFirst bool // the domain is deleted before the unprepare
		wantSpecs   []string
		// wantConfigDir: the domain's IMEX config directory is still there.
		wantConfigDir bool
	}{
		"the claim's CDI spec and checkpoint entry go": {
			claims: []string{"w1"}, unprepared: []string{"w1"},
		},
		"a second workload claim of the domain stays": {
			claims: []string{"w1", "w2"}, unprepared: []string{"w1"}, wantSpecs: []string{"w2"},
		},
		"a deleted domain does not block unprepare": {
			claims: []string{"w1", "d1"}, unprepared: []string{"w1", "d1"}, deleteFirst: true,
		},
		"the domain's last daemon claim takes its IMEX config directory along": {
			claims: []string{"w1", "d1"}, unprepared: []string{"d1"}, wantSpecs: []string{"w1"},
		},
		"a workload claim going leaves the daemon's config alone": {
			claims: []string{"w1", "d1"}, unprepared: []string{"w1"}, wantSpecs: []string{"d1"}, wantConfigDir: true,
		},
		"a claim this node never prepared is a no-op": {
			claims: []string{"w1"}, unprepared: []string{"unknown"}, wantSpecs: []string{"w1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newNodeEnv(t, "gb200-nvl72")
			e.domains.set(domain("a", "team-a", uidA, e.clique, ptr.To[int32](6), testNode))
			d := e.driver()
			for i, c := range tc.claims {
				claim := channelClaim(c, "team-a", typesUID(c), i, uidA, "")
				if c[0] == 'd' {
					claim = daemonClaim(c, "nvidia-dra", typesUID(c), i, uidA)
				}
				if res := prepare(t, d, claim); res.Err != nil {
					t.Fatal(res.Err)
				}
			}
			if tc.deleteFirst {
				e.domains.remove(uidA)
			}
			for _, c := range tc.unprepared {
				if err := unprepare(t, d, channelClaim(c, "team-a", typesUID(c), 0, uidA, "")); err != nil {
					t.Fatalf("unprepare %s: %v", c, err)
				}
			}
			if _, err := os.Stat(d.state.domainConfigDir(uidA)); (err == nil) != tc.wantConfigDir {
				t.Errorf("domain config directory: stat %v, want it there: %v", err, tc.wantConfigDir)
			}
			uids, err := d.state.cdi.ClaimUIDs()
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, c := range tc.wantSpecs {
				want = append(want, string(typesUID(c)))
			}
			if diff := cmp.Diff(want, uids); diff != "" {
				t.Errorf("CDI specs (-want +got):\n%s", diff)
			}
			// The checkpoint on disk agrees.
			cp, _, err := checkpoint.NewStore(e.checkpoint, testBootID).Load()
			if err != nil {
				t.Fatal(err)
			}
			if len(cp.Claims) != len(tc.wantSpecs) {
				t.Errorf("checkpoint holds %d claims, want %d", len(cp.Claims), len(tc.wantSpecs))
			}
		})
	}
}

func typesUID(name string) types.UID { return types.UID("uid-" + name) }

// A crash at any point of a prepare leaves the claim PrepareStarted; after a
// plugin restart the kubelet's retry prepares it, or its unprepare removes
// everything.
func TestCrashBetweenStartedAndCompleted(t *testing.T) {
	for _, point := range []string{"prepare-started", "cdi-written"} {
		for _, then := range []string{"prepare", "unprepare"} {
			t.Run(fmt.Sprintf("crash at %s, then %s", point, then), func(t *testing.T) {
				e := newNodeEnv(t, "gb200-nvl72")
				e.domains.set(domain("a", "team-a", uidA, e.clique, ptr.To[int32](6), testNode))
				claim := channelClaim("w", "team-a", "claim-1", 0, uidA, "")
				d := e.driver()
				d.state.crash = func(p string) bool { return p == point }
				func() {
					defer func() {
						if r := recover(); r != draplugin.ErrSimulatedCrash { //nolint:errorlint // the panic value itself, not a wrapped error
							t.Fatalf("prepare did not reach crash point %s (recovered %v)", point, r)
						}
					}()
					prepare(t, d, claim)
				}()

				restarted := e.driver()
				if got := restarted.state.ledger.Claims()["claim-1"].Status; got != checkpoint.PrepareStarted {
					t.Fatalf("after the crash the claim is %q, want %s", got, checkpoint.PrepareStarted)
				}
				switch then {
				case "prepare":
					res := prepare(t, restarted, claim)
					if res.Err != nil {
						t.Fatal(res.Err)
					}
					if diff := cmp.Diff([]string{"/dev/nvidia-caps-imex-channels/channel6"}, view(t, e, res).DeviceNodes); diff != "" {
						t.Errorf("container view (-want +got):\n%s", diff)
					}
				case "unprepare":
					if err := unprepare(t, restarted, claim); err != nil {
						t.Fatal(err)
					}
					if _, err := os.Stat(restarted.state.cdi.SpecPath("claim-1")); !os.IsNotExist(err) {
						t.Errorf("CDI spec still there after unprepare (stat: %v)", err)
					}
				}
			})
		}
	}
}

// TestStartRemovesConfigDirsOfDomainsWithoutDaemonClaims: after a reboot the checkpoint of the earlier boot is
// discarded, but the IMEX config directories on the host stay; the plugin removes those that no daemon claim
// holds when it starts, and keeps the ones that one does.
func TestStartRemovesConfigDirsOfDomainsWithoutDaemonClaims(t *testing.T) {
	e := newNodeEnv(t, "gb200-nvl72")
	e.domains.set(domain("a", "team-a", uidA, e.clique, nil))
	d := e.driver()
	if res := prepare(t, d, daemonClaim("d", "nvidia-dra", "claim-1", 0, uidA)); res.Err != nil {
		t.Fatal(res.Err)
	}
	stale := filepath.Join(e.configRoot, string(uidB))
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "nodes_config.cfg"), []byte("10.0.0.9\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	e.driver() // the plugin restarts on the same boot
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the config directory of domain %s, which no daemon claim holds, survived the start: %v", uidB, err)
	}
	if _, err := os.Stat(filepath.Join(e.configRoot, string(uidA))); err != nil {
		t.Errorf("the config directory of domain %s, whose daemon claim is prepared, is gone: %v", uidA, err)
	}
}
