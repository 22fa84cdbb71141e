package computedomain

import (
	"fmt"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
)

func TestUnprepare(t *testing.T) {
	cases := map[string]struct {
		// claims are prepared in order; unprepared lists those unprepared.
		claims      []string
		unprepared  []string
		deleteFirst bool // the domain is deleted before the unprepare
		wantLabels  []string
		wantSpecs   []string
	}{
		"the domain's last workload claim on the node removes the label": {
			claims: []string{"w1"}, unprepared: []string{"w1"},
		},
		"a second workload claim of the domain keeps the label": {
			claims: []string{"w1", "w2"}, unprepared: []string{"w1"},
			wantLabels: []string{string(uidA)}, wantSpecs: []string{"w2"},
		},
		"a deleted domain does not block unprepare": {
			claims: []string{"w1", "d1"}, unprepared: []string{"w1", "d1"}, deleteFirst: true,
		},
		"a daemon claim going does not touch the workload's label": {
			claims: []string{"w1", "d1"}, unprepared: []string{"d1"},
			wantLabels: []string{string(uidA)}, wantSpecs: []string{"w1"},
		},
		"a claim this node never prepared is a no-op": {
			claims: []string{"w1"}, unprepared: []string{"unknown"},
			wantLabels: []string{string(uidA)}, wantSpecs: []string{"w1"},
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
			if diff := cmp.Diff(tc.wantLabels, e.labels.current()); diff != "" {
				t.Errorf("node labels (-want +got):\n%s", diff)
			}
			uids, err := d.cdi.ClaimUIDs()
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
// everything, label included.
func TestCrashBetweenStartedAndCompleted(t *testing.T) {
	for _, point := range []string{"prepare-started", "node-labeled", "cdi-written"} {
		for _, then := range []string{"prepare", "unprepare"} {
			t.Run(fmt.Sprintf("crash at %s, then %s", point, then), func(t *testing.T) {
				e := newNodeEnv(t, "gb200-nvl72")
				e.domains.set(domain("a", "team-a", uidA, e.clique, ptr.To[int32](6), testNode))
				claim := channelClaim("w", "team-a", "claim-1", 0, uidA, "")
				d := e.driver()
				d.crash = func(p string) bool { return p == point }
				func() {
					defer func() {
						if r := recover(); r != errCrash { //nolint:errorlint // the panic value itself, not a wrapped error
							t.Fatalf("prepare did not reach crash point %s (recovered %v)", point, r)
						}
					}()
					prepare(t, d, claim)
				}()

				restarted := e.driver()
				if got := restarted.state.Claims["claim-1"].Status; got != checkpoint.PrepareStarted {
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
					if diff := cmp.Diff([]string{string(uidA)}, e.labels.current()); diff != "" {
						t.Errorf("node labels (-want +got):\n%s", diff)
					}
				case "unprepare":
					if err := unprepare(t, restarted, claim); err != nil {
						t.Fatal(err)
					}
					if got := e.labels.current(); len(got) != 0 {
						t.Errorf("node labels after unprepare = %v, want none", got)
					}
					if _, err := os.Stat(restarted.cdi.SpecPath("claim-1")); !os.IsNotExist(err) {
						t.Errorf("CDI spec still there after unprepare (stat: %v)", err)
					}
				}
			})
		}
	}
}

func TestLabelSync(t *testing.T) {
	cases := map[string]struct {
		prepared     bool
		deleteDomain bool
		strayLabel   bool
		removeLabel  bool
		wantLabels   []string
	}{
		"a deleted domain's label goes, though its claim is still prepared": {
			prepared: true, deleteDomain: true,
		},
		"a live domain with a prepared claim keeps its label": {
			prepared: true, wantLabels: []string{string(uidA)},
		},
		"a label removed by someone else comes back": {
			prepared: true, removeLabel: true, wantLabels: []string{string(uidA)},
		},
		"a label without a prepared claim goes (a crash after unprepare's checkpoint write)": {
			strayLabel: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newNodeEnv(t, "gb200-nvl72")
			e.domains.set(domain("a", "team-a", uidA, e.clique, ptr.To[int32](6), testNode))
			d := e.driver()
			if tc.prepared {
				if res := prepare(t, d, channelClaim("w", "team-a", "claim-1", 0, uidA, "")); res.Err != nil {
					t.Fatal(res.Err)
				}
			}
			if tc.strayLabel {
				e.labels.labels[uidA] = true
			}
			if tc.removeLabel {
				delete(e.labels.labels, uidA)
			}
			if tc.deleteDomain {
				e.domains.remove(uidA)
			}
			if err := d.SyncLabels(e.ctx()); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantLabels, e.labels.current()); diff != "" {
				t.Errorf("node labels (-want +got):\n%s", diff)
			}
		})
	}
}
