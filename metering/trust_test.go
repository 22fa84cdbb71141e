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

package metering

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/computedomain-operator/computedomain-operator/internal/usage"
)

// forgedNode is a compromised node's plugin: it answers whatever page it
// wants.
func forgedNode(t *testing.T, page usage.Page) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(page)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + usage.Path
}

func TestANodeCannotWriteIntoAnotherNodesLedger(t *testing.T) {
	a := newFakeNode(t, "node-a")
	c := &fakeCluster{nodes: []*fakeNode{a}, teams: map[string]string{"ml": "vision"}}
	m := c.meter()
	s := a.start(t, "c1", "ml", h100)
	a.clock.Step(10 * time.Second)
	pull(t, m)
	// Node B answers with A's ledger ID (readable from A's /usage), an early
	// end of A's open interval and a huge sequence number.
	c.extra = []Endpoint{{Node: "node-b", Pod: PodRef{Namespace: "cdo", Name: "plugin-b", UID: "pod-b"}, URL: forgedNode(t, usage.Page{
		Ledger: a.ledger.ID(), Node: "node-b", Now: a.clock.Now(), NextSeq: 1 << 40,
		Records: []usage.Record{{Seq: 1<<40 - 1, Kind: usage.KindEnd, Time: a.clock.Now(), ClaimUID: "c1", Start: s}},
	})}}
	_ = m.Pull(t.Context())
	a.clock.Step(7200 * time.Second)
	a.end(t, "c1", s)
	_ = m.Pull(t.Context())
	if got := deviceSeconds(m, "ml"); !near(got, 7210) {
		t.Errorf("namespace ml: %v device-seconds, want 7210: node B changed node A's bill", got)
	}
	if got := c.events.reasons("plugin-b"); len(got) != 1 || got[0] != ReasonForeignLedger {
		t.Errorf("events on node B's plugin pod %v, want one %s", got, ReasonForeignLedger)
	}
	if got := refusedLedgers(m, "node-b"); got != 1 {
		t.Errorf("refused ledgers of node-b %v, want 1", got)
	}
}

func TestAClonedDiskChangesNeitherNodesBill(t *testing.T) {
	a := newFakeNode(t, "node-a")
	c := &fakeCluster{nodes: []*fakeNode{a}}
	m := c.meter()
	s1 := a.start(t, "c1", "ml", h100)
	pull(t, m)
	// Node B boots from a copy of A's disk: same usage.jsonl, same ID.
	raw, err := os.ReadFile(a.path)
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeNode{name: "node-b", path: filepath.Join(t.TempDir(), "usage.jsonl"), clock: clocktesting.NewFakeClock(t0)}
	if err := os.WriteFile(b.path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	b.reopen(t)
	c.nodes = append(c.nodes, b)
	s2 := b.start(t, "c2", "speech", h100)
	a.clock.Step(100 * time.Second)
	b.clock.Step(100 * time.Second)
	a.end(t, "c1", s1)
	b.end(t, "c2", s2)
	_ = m.Pull(t.Context())
	if got := deviceSeconds(m, "ml"); !near(got, 100) {
		t.Errorf("node A's namespace ml: %v device-seconds, want 100", got)
	}
	if got := deviceSeconds(m, "speech"); !near(got, 100) {
		t.Errorf("node B's namespace speech: %v device-seconds, want 100", got)
	}
}

func TestANodeCannotBillATeamForAClaimItNeverHad(t *testing.T) {
	n := newFakeNode(t, "node-a")
	c := &fakeCluster{nodes: []*fakeNode{n}, watching: t0.Add(-time.Hour), claims: map[string]fakeClaim{
		"c1":     {namespace: "ml", name: "claim-c1", node: "node-a", devices: []string{"gpu-0"}},
		"stolen": {namespace: "victim", name: "claim-stolen", node: "node-b", devices: []string{"gpu-0"}},
	}}
	m := c.meter()
	n.start(t, "c1", "ml", h100)
	var many []usage.Device
	for i := range 64 {
		d := h100
		d.Name = fmt.Sprintf("gpu-%d", i)
		many = append(many, d)
	}
	n.start(t, "forged", "victim", many...) // a claim that never existed
	n.start(t, "stolen", "victim", h100)    // a claim of another node's devices
	n.clock.Step(time.Hour)
	pull(t, m)
	if got := deviceSeconds(m, "victim"); got != 0 {
		t.Errorf("namespace victim: %v device-seconds, want 0", got)
	}
	if got := deviceSeconds(m, "ml"); !near(got, 3600) {
		t.Errorf("namespace ml: %v device-seconds, want 3600", got)
	}
	if got := refusedIntervals(m, "node-a"); got != 2 {
		t.Errorf("refused intervals of node-a %v, want 2", got)
	}
	if got := c.events.reasons("plugin-node-a"); len(got) != 2 || got[0] != ReasonIntervalRefused {
		t.Errorf("events %v, want two %s", got, ReasonIntervalRefused)
	}
}

func TestAClaimGoneBeforeTheMeterWatchedIsBilledUnverified(t *testing.T) {
	n := newFakeNode(t, "node-a")
	// The meter starts watching claims at t0+5m; c1 lived from t0 to
	// t0+1m, while it was down; c2 started while it watched and is unknown.
	// c3, a claim that still exists, was deallocated meanwhile.
	c := &fakeCluster{nodes: []*fakeNode{n}, watching: t0.Add(5 * time.Minute), claims: map[string]fakeClaim{
		"c3": {namespace: "ml", name: "claim-c3", created: t0},
	}}
	s1 := n.start(t, "c1", "ml", h100)
	s3 := n.start(t, "c3", "ml", mig3)
	n.clock.Step(30 * time.Second)
	n.end(t, "c3", s3)
	n.clock.Step(30 * time.Second)
	n.end(t, "c1", s1)
	n.clock.Step(5 * time.Minute)
	n.start(t, "c2", "ml", mig3)
	n.clock.Step(time.Minute)
	m := c.meter()
	pull(t, m)
	if got := deviceSeconds(m, "ml"); !near(got, 90) {
		t.Errorf("namespace ml: %v device-seconds, want c1's 60 and c3's 30 (unverifiable) and none of c2 (unknown)", got)
	}
	if h := m.Health(); h.Unverified["node-a"] != 2 || h.RefusedIntervals[Refusal{Node: "node-a", Reason: ReasonUnknownClaim}] != 1 {
		t.Errorf("health %+v, want one unverified and one unknown claim refused", h)
	}
}

func TestARecreatedLedgerBillsEachClaimOnce(t *testing.T) {
	n := newFakeNode(t, "node-a")
	c := &fakeCluster{nodes: []*fakeNode{n}}
	m := c.meter()
	s := n.start(t, "c1", "ml", h100)
	n.clock.Step(100 * time.Second)
	pull(t, m)
	// usage.jsonl is recreated; the checkpoint survives, so the plugin's
	// sync writes c1's start again at its original time.
	n.path = filepath.Join(t.TempDir(), "usage.jsonl")
	n.reopen(t)
	if _, err := n.ledger.Append(usage.Record{Kind: usage.KindStart, Time: s, Start: s, ClaimUID: "c1", Namespace: "ml", Name: "claim-c1", Devices: []usage.Device{h100}}); err != nil {
		t.Fatal(err)
	}
	n.clock.Step(50 * time.Second)
	n.end(t, "c1", s)
	pull(t, m)
	if got := deviceSeconds(m, "ml"); !near(got, 150) {
		t.Errorf("namespace ml: %v device-seconds, want 150 (the claim held the GPU once, for 150 s)", got)
	}
	for _, iv := range m.Intervals() {
		if iv.Open {
			t.Errorf("interval %+v still open: the old ledger's start is superseded", iv)
		}
	}
}

func TestANodeClockAYearAheadBillsNoMoreThanTheMetersClock(t *testing.T) {
	n := newFakeNode(t, "node-a")
	mc := clocktesting.NewFakeClock(t0)
	c := &fakeCluster{nodes: []*fakeNode{n}, clock: mc}
	m := c.meter()
	s := n.start(t, "c1", "ml", h100)
	n.clock.Step(10 * time.Second)
	mc.Step(10 * time.Second)
	pull(t, m)
	n.clock.Step(365 * 24 * time.Hour)
	mc.Step(10 * time.Second)
	pull(t, m)
	if got := deviceSeconds(m, "ml"); !near(got, 20) {
		t.Errorf("open interval: %v device-seconds, want 20 (the meter's time of the last pull)", got)
	}
	n.end(t, "c1", s)
	mc.Step(10 * time.Second)
	pull(t, m)
	if got := deviceSeconds(m, "ml"); !near(got, 30) {
		t.Errorf("closed interval: %v device-seconds, want 30 (the end bounded by the pull that saw it)", got)
	}
	if h := m.Health(); h.ClockBounded["node-a"] != 1 {
		t.Errorf("clock-bounded intervals %v, want node-a's one", h.ClockBounded)
	}
}
