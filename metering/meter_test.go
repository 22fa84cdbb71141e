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
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/computedomain-operator/computedomain-operator/internal/usage"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const gib = 1 << 30

var (
	h100 = usage.Device{Name: "gpu-0", Class: "gpu.nvidia.com", Type: "gpu", MemoryBytes: 80 * gib}
	mig3 = usage.Device{Name: "gpu-1-mig-3g40gb-9-0", Class: "mig.nvidia.com", Type: "mig", MemoryBytes: 40 * gib, Profile: "3g.40gb", MemorySlices: 3, ParentMemorySlices: 7}
)

// fakeNode is one node's plugin: a real ledger file behind the real handler.
type fakeNode struct {
	name   string
	path   string
	ledger *usage.Ledger
	clock  *clocktesting.FakeClock
	srv    *httptest.Server
	down   bool
}

func newFakeNode(t *testing.T, name string) *fakeNode {
	t.Helper()
	n := &fakeNode{name: name, path: filepath.Join(t.TempDir(), "usage.jsonl"), clock: clocktesting.NewFakeClock(t0)}
	n.reopen(t)
	return n
}

func (n *fakeNode) reopen(t *testing.T) {
	t.Helper()
	l, err := usage.Open(n.path, usage.Options{Node: n.name, Clock: n.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	n.ledger = l
	if n.srv != nil {
		n.srv.Close()
	}
	n.srv = httptest.NewServer(usage.Handler(l, n.name, n.clock))
	t.Cleanup(n.srv.Close)
}

func (n *fakeNode) start(t *testing.T, uid, ns string, devs ...usage.Device) time.Time {
	t.Helper()
	at := n.clock.Now()
	if _, err := n.ledger.Append(usage.Record{Kind: usage.KindStart, Time: at, Start: at, ClaimUID: uid, Namespace: ns, Name: "claim-" + uid, Devices: devs}); err != nil {
		t.Fatal(err)
	}
	return at
}

func (n *fakeNode) end(t *testing.T, uid string, from time.Time) {
	t.Helper()
	if _, err := n.ledger.Append(usage.Record{Kind: usage.KindEnd, Time: n.clock.Now(), Start: from, ClaimUID: uid}); err != nil {
		t.Fatal(err)
	}
}

// fakeClaim is a claim as the API server knows it: its devices are on
// node's pool.
type fakeClaim struct {
	namespace, name, node string
	devices               []string
	created               time.Time
}

type fakeCluster struct {
	nodes []*fakeNode
	// extra are more plugins to pull (forged ones).
	extra []Endpoint
	teams map[string]string
	pods  map[string][]string
	// claims by UID, as the meter's watch saw them since watching (zero:
	// the meter watches no claims and verifies none).
	claims   map[string]fakeClaim
	watching time.Time
	// clock is the meter's; nil: the latest of the nodes' clocks.
	clock  *clocktesting.FakeClock
	events fakeEvents
}

func (c *fakeCluster) Endpoints(context.Context) ([]Endpoint, error) {
	var out []Endpoint
	for _, n := range c.nodes {
		url := n.srv.URL + usage.Path
		if n.down {
			url = "http://127.0.0.1:1" + usage.Path
		}
		out = append(out, Endpoint{Node: n.name, Pod: PodRef{Namespace: "cdo", Name: "plugin-" + n.name, UID: types.UID("uid-plugin-" + n.name)}, URL: url})
	}
	return append(out, c.extra...), nil
}

// fakeEvents records the meter's events per pod.
type fakeEvents struct{ byPod map[string][]string }

func (e *fakeEvents) Warn(_ context.Context, pod PodRef, reason, _ string) {
	if e.byPod == nil {
		e.byPod = map[string][]string{}
	}
	e.byPod[pod.Name] = append(e.byPod[pod.Name], reason)
}

func (e *fakeEvents) reasons(pod string) []string { return e.byPod[pod] }

func (c *fakeCluster) Team(_ context.Context, ns string) (string, error) { return c.teams[ns], nil }

func (c *fakeCluster) Pods(_ context.Context, ns, name string) ([]string, error) {
	return c.pods[ns+"/"+name], nil
}

func (c *fakeCluster) Claim(_ context.Context, ns, name string, uid types.UID) (ClaimFacts, bool, error) {
	fc, ok := c.claims[string(uid)]
	if !ok {
		return ClaimFacts{}, false, nil
	}
	f := ClaimFacts{UID: uid, Namespace: fc.namespace, Name: fc.name, Created: fc.created}
	for _, d := range fc.devices {
		f.Devices = append(f.Devices, fc.node+"/"+d)
	}
	return f, true, nil
}

func (c *fakeCluster) WatchingSince() time.Time { return c.watching }

// meterClock is the meter's clock: c.clock, or else the latest node's.
type meterClock struct{ c *fakeCluster }

func (m meterClock) Now() time.Time {
	if m.c.clock != nil {
		return m.c.clock.Now()
	}
	var now time.Time
	for _, n := range m.c.nodes {
		now = latest(now, n.clock.Now())
	}
	return now
}

func (m meterClock) Since(t time.Time) time.Duration { return m.Now().Sub(t) }

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (c *fakeCluster) meter() *Meter {
	return NewMeter(c, HTTPFetcher{}, c, WithClaims(c), WithEvents(&c.events), WithClock(meterClock{c}))
}

func refusedLedgers(m *Meter, node string) int {
	return m.Health().RefusedLedgers[Refusal{Node: node, Reason: ReasonForeignLedger}]
}

func refusedIntervals(m *Meter, node string) int {
	sum := 0
	for r, n := range m.Health().RefusedIntervals {
		if r.Node == node {
			sum += n
		}
	}
	return sum
}

func pull(t *testing.T, m *Meter) {
	t.Helper()
	if err := m.Pull(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// share is d held as one share (consumable capacity) consuming memory ("" or "0": none).
func share(d usage.Device, id, memory string) usage.Device {
	d.ShareID = id
	if memory != "" {
		d.ConsumedCapacity = map[string]string{"memory": memory}
	}
	return d
}

func TestTotalsInEveryUnit(t *testing.T) {
	iv := func(ns string, d usage.Device, from, to time.Duration) Interval {
		return Interval{Ledger: "l", Node: "n", ClaimUID: ns + d.Name + from.String(), Namespace: ns, Team: "t-" + ns, Device: d, Start: t0.Add(from), End: t0.Add(to)}
	}
	admin := h100
	admin.AdminAccess = true
	cases := map[string]struct {
		intervals []Interval
		from, to  time.Time
		want      map[Key]float64
	}{
		"a GPU for 100 s and a 3-slice MIG device for 10 s": {
			intervals: []Interval{iv("a", h100, 0, 100*time.Second), iv("b", mig3, 0, 10*time.Second)},
			want: map[Key]float64{
				{"t-a", "a", "gpu.nvidia.com", DeviceSeconds}: 100, {"t-a", "a", "gpu.nvidia.com", GPUMemoryGiBSeconds}: 8000, {"t-a", "a", "gpu.nvidia.com", MIGSliceSeconds}: 0,
				{"t-b", "b", "mig.nvidia.com", DeviceSeconds}: 10, {"t-b", "b", "mig.nvidia.com", GPUMemoryGiBSeconds}: 400, {"t-b", "b", "mig.nvidia.com", MIGSliceSeconds}: 30,
			},
		},
		"clipped to the period": {
			intervals: []Interval{iv("a", h100, 0, 100*time.Second)},
			from:      t0.Add(30 * time.Second), to: t0.Add(60 * time.Second),
			want: map[Key]float64{{"t-a", "a", "gpu.nvidia.com", DeviceSeconds}: 30, {"t-a", "a", "gpu.nvidia.com", GPUMemoryGiBSeconds}: 2400, {"t-a", "a", "gpu.nvidia.com", MIGSliceSeconds}: 0},
		},
		"a device shared by two claims for part of the time": {
			// a alone 0-10, a and b 10-20 (half each), b alone 20-30.
			intervals: []Interval{iv("a", h100, 0, 20*time.Second), iv("b", h100, 10*time.Second, 30*time.Second)},
			want: map[Key]float64{
				{"t-a", "a", "gpu.nvidia.com", DeviceSeconds}: 15, {"t-a", "a", "gpu.nvidia.com", GPUMemoryGiBSeconds}: 1200, {"t-a", "a", "gpu.nvidia.com", MIGSliceSeconds}: 0,
				{"t-b", "b", "gpu.nvidia.com", DeviceSeconds}: 15, {"t-b", "b", "gpu.nvidia.com", GPUMemoryGiBSeconds}: 1200, {"t-b", "b", "gpu.nvidia.com", MIGSliceSeconds}: 0,
			},
		},
		"two consumable shares of one GPU: GiB-seconds of the memory each consumes, device-seconds split": {
			// a 30Gi share 0-20, a 10Gi share 10-30.
			intervals: []Interval{iv("a", share(h100, "s-a", "30Gi"), 0, 20*time.Second), iv("b", share(h100, "s-b", "10Gi"), 10*time.Second, 30*time.Second)},
			want: map[Key]float64{
				{"t-a", "a", "gpu.nvidia.com", DeviceSeconds}: 15, {"t-a", "a", "gpu.nvidia.com", GPUMemoryGiBSeconds}: 600, {"t-a", "a", "gpu.nvidia.com", MIGSliceSeconds}: 0,
				{"t-b", "b", "gpu.nvidia.com", DeviceSeconds}: 15, {"t-b", "b", "gpu.nvidia.com", GPUMemoryGiBSeconds}: 200, {"t-b", "b", "gpu.nvidia.com", MIGSliceSeconds}: 0,
			},
		},
		"a share that consumes no memory (unlimited, no request) is billed as a shared device": {
			intervals: []Interval{iv("a", share(h100, "s-a", "0"), 0, 10*time.Second), iv("b", share(h100, "s-b", ""), 0, 10*time.Second)},
			want: map[Key]float64{
				{"t-a", "a", "gpu.nvidia.com", DeviceSeconds}: 5, {"t-a", "a", "gpu.nvidia.com", GPUMemoryGiBSeconds}: 400, {"t-a", "a", "gpu.nvidia.com", MIGSliceSeconds}: 0,
				{"t-b", "b", "gpu.nvidia.com", DeviceSeconds}: 5, {"t-b", "b", "gpu.nvidia.com", GPUMemoryGiBSeconds}: 400, {"t-b", "b", "gpu.nvidia.com", MIGSliceSeconds}: 0,
			},
		},
		"admin access is not billed and does not split the owner's share": {
			intervals: []Interval{iv("a", h100, 0, 10*time.Second), iv("mon", admin, 0, 10*time.Second)},
			want:      map[Key]float64{{"t-a", "a", "gpu.nvidia.com", DeviceSeconds}: 10, {"t-a", "a", "gpu.nvidia.com", GPUMemoryGiBSeconds}: 800, {"t-a", "a", "gpu.nvidia.com", MIGSliceSeconds}: 0},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Totals(tc.intervals, tc.from, tc.to)
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(near)); diff != "" {
				t.Errorf("totals (-want +got):\n%s", diff)
			}
		})
	}
}

func deviceSeconds(m *Meter, ns string) float64 {
	sum := 0.0
	for k, v := range Totals(m.Intervals(), time.Time{}, time.Time{}) {
		if k.Namespace == ns && k.Unit == DeviceSeconds {
			sum += v
		}
	}
	return sum
}

func TestARestartedMeterNeitherDoubleCountsNorLoses(t *testing.T) {
	n1, n2 := newFakeNode(t, "node-1"), newFakeNode(t, "node-2")
	c := &fakeCluster{nodes: []*fakeNode{n1, n2}, teams: map[string]string{"a": "team-a", "b": "team-b"}}
	m := c.meter()
	s1 := n1.start(t, "c1", "a", h100)
	n2.start(t, "c2", "b", mig3)
	n1.clock.Step(40 * time.Second)
	n2.clock.Step(40 * time.Second)
	n1.end(t, "c1", s1)
	pull(t, m)
	pull(t, m) // pulling again adds nothing
	if got := deviceSeconds(m, "a"); !near(got, 40) {
		t.Errorf("namespace a: %v device-seconds, want 40", got)
	}
	if got := deviceSeconds(m, "b"); !near(got, 40) {
		t.Errorf("namespace b: %v device-seconds (open interval up to the node's now), want 40", got)
	}

	// The meter is down for 100 s; the nodes keep recording.
	n1.clock.Step(100 * time.Second)
	n2.clock.Step(100 * time.Second)
	s3 := n1.start(t, "c3", "a", h100)
	n1.clock.Step(20 * time.Second)
	n2.clock.Step(20 * time.Second)
	n1.end(t, "c3", s3)
	restarted := c.meter()
	pull(t, restarted)
	if got := deviceSeconds(restarted, "a"); !near(got, 60) {
		t.Errorf("namespace a after the restart: %v device-seconds, want 40 + 20", got)
	}
	if got := deviceSeconds(restarted, "b"); !near(got, 160) {
		t.Errorf("namespace b after the restart: %v device-seconds, want 160 (still open)", got)
	}
	if diff := cmp.Diff(Totals(restarted.Intervals(), time.Time{}, time.Time{}), func() map[Key]float64 {
		pull(t, m)
		return Totals(m.Intervals(), time.Time{}, time.Time{})
	}(), cmp.Comparer(near)); diff != "" {
		t.Errorf("the restarted meter and the one that kept running disagree (-restarted +running):\n%s", diff)
	}
}

func TestANodeThatCannotBeReadIsCaughtUpLater(t *testing.T) {
	n := newFakeNode(t, "node-1")
	c := &fakeCluster{nodes: []*fakeNode{n}, teams: map[string]string{"a": "team-a"}}
	m := c.meter()
	s := n.start(t, "c1", "a", h100)
	pull(t, m)
	n.down = true
	n.clock.Step(50 * time.Second)
	n.end(t, "c1", s)
	if err := m.Pull(context.Background()); err == nil {
		t.Fatal("a pull of an unreachable node did not fail")
	}
	if got := deviceSeconds(m, "a"); !near(got, 0) {
		t.Errorf("%v device-seconds while the node is unreachable, want 0 (open until the last pull)", got)
	}
	n.down = false
	pull(t, m)
	if got := deviceSeconds(m, "a"); !near(got, 50) {
		t.Errorf("%v device-seconds after catching up, want 50", got)
	}
	if st := m.Nodes(); len(st) != 1 || st[0].Errors != 1 {
		t.Errorf("node status %+v, want one error", st)
	}
}

func TestANodeWithANewLedgerKeepsWhatTheOldOneSaid(t *testing.T) {
	n := newFakeNode(t, "node-1")
	c := &fakeCluster{nodes: []*fakeNode{n}}
	m := c.meter()
	s := n.start(t, "c1", "a", h100)
	n.clock.Step(10 * time.Second)
	n.end(t, "c1", s)
	pull(t, m)
	// The node's ledger file is lost and recreated.
	n.path = filepath.Join(t.TempDir(), "usage.jsonl")
	n.reopen(t)
	s2 := n.start(t, "c2", "a", h100)
	n.clock.Step(5 * time.Second)
	n.end(t, "c2", s2)
	pull(t, m)
	if got := deviceSeconds(m, "a"); !near(got, 15) {
		t.Errorf("%v device-seconds, want 10 from the old ledger + 5 from the new", got)
	}
}

func TestTheTeamIsTheNamespacesWhenTheIntervalWasFirstSeen(t *testing.T) {
	n := newFakeNode(t, "node-1")
	c := &fakeCluster{nodes: []*fakeNode{n}, teams: map[string]string{"ml": "vision"}, pods: map[string][]string{"ml/claim-c1": {"train-0"}}}
	m := c.meter()
	s := n.start(t, "c1", "ml", h100)
	pull(t, m)
	c.teams["ml"] = "speech"
	n.clock.Step(10 * time.Second)
	n.end(t, "c1", s)
	pull(t, m)
	ivs := m.Intervals()
	if len(ivs) != 1 || ivs[0].Team != "vision" || !cmp.Equal(ivs[0].Pods, []string{"train-0"}) {
		t.Errorf("intervals %+v, want one of team vision with pod train-0", ivs)
	}
}

func TestReportFormats(t *testing.T) {
	ivs := []Interval{
		{Ledger: "l", Node: "n1", ClaimUID: "u1", Namespace: "a", Claim: "c1", Team: "team-a", Device: h100, Start: t0, End: t0.Add(100 * time.Second)},
		{Ledger: "l", Node: "n1", ClaimUID: "u2", Namespace: "b", Claim: "c2", Team: "team-b", Device: mig3, Start: t0, End: t0.Add(10 * time.Second)},
	}
	units := BillingUnits{Default: DeviceSeconds, Classes: map[string]Unit{"mig.nvidia.com": MIGSliceSeconds}}
	rep := BuildReport(ivs, t0, t0.Add(time.Hour), units)
	var buf bytes.Buffer
	if err := rep.Write(&buf, FormatCSV); err != nil {
		t.Fatal(err)
	}
	lines, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		CSVHeader,
		{"2026-11-29T12:00:00Z", "2026-11-29T13:00:00Z", "team-a", "a", "gpu.nvidia.com", "100.000", "8000.000", "0.000", "device-seconds", "100.000"},
		{"2026-11-29T12:00:00Z", "2026-11-29T13:00:00Z", "team-b", "b", "mig.nvidia.com", "10.000", "400.000", "30.000", "mig-slice-seconds", "30.000"},
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("CSV (-want +got):\n%s", diff)
	}
	if len(rep.Teams) != 2 || rep.Teams[1].Billed[MIGSliceSeconds] != 30 || len(rep.Intervals) != 2 {
		t.Errorf("report %+v: want two team bills (team-b 30 slice-seconds) and two intervals", rep)
	}
}

func TestBadInputsNameTheField(t *testing.T) {
	cases := map[string]struct {
		err  error
		want string
	}{
		"unit":           {err: func() error { _, err := ParseUnit("gpu-hours"); return err }(), want: `unit "gpu-hours": allowed: device-seconds, gpu-memory-GiB-seconds, mig-slice-seconds`},
		"billing unit":   {err: func() error { _, _, err := ParseBillingUnit("gpu.nvidia.com"); return err }(), want: `--billing-unit "gpu.nvidia.com": want <device class>=<unit>`},
		"format":         {err: func() error { _, err := ParseFormat("xml"); return err }(), want: `format "xml": allowed: csv, json`},
		"from":           {err: func() error { _, _, err := ParsePeriod("yesterday", "2026-12-01T00:00:00Z"); return err }(), want: `from "yesterday": must be an RFC 3339 time`},
		"to before from": {err: func() error { _, _, err := ParsePeriod("2026-12-01T00:00:00Z", "2026-11-01T00:00:00Z"); return err }(), want: "must be after from"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", tc.err, tc.want)
			}
		})
	}
}

// TestTheReportSaysWhatAShareConsumed: a share's report interval names its share ID and the memory it was
// billed by, so a team can check its GiB-seconds.
func TestTheReportSaysWhatAShareConsumed(t *testing.T) {
	ivs := []Interval{
		{Ledger: "l", Node: "n", ClaimUID: "c1", Namespace: "a", Team: "t-a", Device: share(h100, "s-1", "30Gi"), Start: t0, End: t0.Add(10 * time.Second)},
		{Ledger: "l", Node: "n", ClaimUID: "c2", Namespace: "a", Team: "t-a", Device: h100, Start: t0, End: t0.Add(10 * time.Second)},
	}
	rep := BuildReport(ivs, t0, t0.Add(time.Minute), BillingUnits{Default: GPUMemoryGiBSeconds})
	got := map[string]string{}
	for _, ri := range rep.Intervals {
		got[ri.ClaimUID] = fmt.Sprintf("%s %.0f", ri.ShareID, ri.ConsumedMemoryGiB)
	}
	if diff := cmp.Diff(map[string]string{"c1": "s-1 30", "c2": " 0"}, got); diff != "" {
		t.Errorf("report intervals (-want +got):\n%s", diff)
	}
}
