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
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin/crashtest"
)

// TestCrashHarness kills the compute-domain plugin at a random crash point of a random script of prepares
// and unprepares of two domains' daemon claims and channel claims (Single and All) on one node, restarts it,
// answers as the kubelet does (retry, or unprepare a claim whose pod went away) and checks the node: every
// claim the script left prepared is prepared once and sees its own domain's channel only, no slot is in two
// claims, and no CDI spec or IMEX config directory outlives its claims. CRASH_TRIALS sets the number of
// crashes (default 200), CRASH_SEED the seed.
func TestCrashHarness(t *testing.T) {
	crashtest.Harness(t, 200, []string{"prepare-started", "cdi-written", "unprepare-cdi-deleted", "unprepare-claim-deleted"},
		func(rng *rand.Rand, name string) string { return runCDCrashTrial(t, rng, name) })
}

// cdNode is the compute-domain plugin on a harness node.
type cdNode struct {
	t      *testing.T
	e      *nodeEnv
	d      *Driver
	claims []*resourceapi.ResourceClaim
}

func (n *cdNode) Restart() { n.d = n.e.driver() }

func (n *cdNode) Call(prepareIt bool, i int) error {
	if prepareIt {
		return prepare(n.t, n.d, n.claims[i]).Err
	}
	return unprepare(n.t, n.d, n.claims[i])
}

func runCDCrashTrial(t *testing.T, rng *rand.Rand, trial string) string {
	t.Helper()
	e := newNodeEnv(t, "gb200-nvl72")
	e.domains.set(domain("a", "team-a", uidA, e.clique, ptr.To[int32](6), testNode))
	e.domains.set(domain("b", "team-b", uidB, e.clique, ptr.To[int32](7), testNode))
	claims := []*resourceapi.ResourceClaim{
		daemonClaim("daemon-a", "nvidia-dra", "claim-da", 0, uidA),
		daemonClaim("daemon-b", "nvidia-dra", "claim-db", 1, uidB),
		channelClaim("w-a1", "team-a", "claim-wa1", 0, uidA, ""),
		channelClaim("w-a2", "team-a", "claim-wa2", 1, uidA, apiv1beta1.AllocationModeAll),
		channelClaim("w-b", "team-b", "claim-wb", 2, uidB, ""),
	}
	hook := crashtest.NewHook(rng, 8)
	node := &cdNode{t: t, e: e, d: e.driver(), claims: claims}
	node.d.state.crash = hook.At
	left := crashtest.Run(t, rng, node, crashtest.Script(rng, len(claims)), trial)
	node.d.state.crash = nil // the checks below are no part of the script
	// A plugin start sweeps IMEX config directories no daemon claim holds; check the node as it is and after
	// one more restart.
	for _, when := range []string{"", " after a restart"} {
		if when != "" {
			node.Restart()
		}
		checkCDNode(t, node, left, when != "", fmt.Sprintf("%s (crash at %q)%s", trial, hook.Point, when))
	}
	for i := range left {
		if err := unprepare(t, node.d, claims[i]); err != nil {
			t.Fatalf("%s: final unprepare of %s: %v", trial, claims[i].Name, err)
		}
	}
	checkCDNode(t, node, nil, true, trial+" after unpreparing everything")
	return hook.Point
}

// checkCDNode checks the node; swept says the plugin started since the last unprepare, so that no IMEX config
// directory of a domain without daemon claims may remain.
func checkCDNode(t *testing.T, n *cdNode, prepared map[int]bool, swept bool, trial string) {
	t.Helper()
	want := map[string]bool{}
	daemonDomains := map[types.UID]bool{}
	for i := range prepared {
		want[string(n.claims[i].UID)] = true
	}
	recorded := n.d.state.ledger.Claims()
	crashtest.CheckRecorded(t, recorded, want, trial)
	for _, cs := range recorded {
		if data, ok := claimData(cs.Devices); ok && data.Kind == apiv1beta1.DeviceTypeDaemon {
			daemonDomains[data.DomainUID] = true
		}
	}
	specs, err := n.d.state.cdi.ClaimUIDs()
	if err != nil {
		t.Fatal(err)
	}
	crashtest.CheckSpecs(t, specs, want, trial)
	for _, uid := range []types.UID{uidA, uidB} {
		_, err := os.Stat(n.d.state.domainConfigDir(uid))
		if exists := err == nil; exists && !daemonDomains[uid] && swept {
			t.Errorf("%s: the IMEX config directory of domain %s outlives its daemon claims", trial, uid)
		} else if !exists && daemonDomains[uid] {
			t.Errorf("%s: domain %s has a prepared daemon claim but no IMEX config directory", trial, uid)
		}
	}
	// Each prepared channel claim sees its own domain's channel only, and preparing it again changes nothing.
	channels := map[types.UID]string{uidA: "/dev/nvidia-caps-imex-channels/channel6", uidB: "/dev/nvidia-caps-imex-channels/channel7"}
	for i := range prepared {
		c := n.claims[i]
		res := prepare(t, n.d, c)
		if res.Err != nil {
			t.Errorf("%s: repeated prepare of %s: %v", trial, c.Name, res.Err)
			continue
		}
		if c.Namespace == "nvidia-dra" {
			continue
		}
		domainUID := uidA
		if c.Namespace == "team-b" {
			domainUID = uidB
		}
		if got := view(t, n.e, res).DeviceNodes; !slices.Equal(got, []string{channels[domainUID]}) {
			t.Errorf("%s: claim %s sees channels %v, want only %s", trial, c.Name, got, channels[domainUID])
		}
	}
}
