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

package usage

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func start(uid string, at time.Time, devs ...Device) Record {
	return Record{Kind: KindStart, Time: at, ClaimUID: uid, Start: at, Namespace: "ns", Name: "c-" + uid, Devices: devs}
}

func end(uid string, from, at time.Time) Record {
	return Record{Kind: KindEnd, Time: at, ClaimUID: uid, Start: from}
}

func mustOpen(t *testing.T, path string) *Ledger {
	t.Helper()
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func mustAppend(t *testing.T, l *Ledger, recs ...Record) {
	t.Helper()
	if _, err := l.Append(recs...); err != nil {
		t.Fatal(err)
	}
}

func seqs(recs []Record) []uint64 {
	out := []uint64{}
	for _, r := range recs {
		out = append(out, r.Seq)
	}
	return out
}

func TestLedgerSurvivesReopenWithItsIDAndNumbers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.jsonl")
	l := mustOpen(t, path)
	gpu := Device{Name: "gpu-0", Type: "gpu", MemoryBytes: 80 << 30}
	mustAppend(t, l, start("a", t0, gpu), start("b", t0.Add(time.Second)))
	mustAppend(t, l, end("a", t0, t0.Add(time.Minute)))
	id := l.ID()
	_ = l.Close()

	again := mustOpen(t, path)
	if again.ID() != id {
		t.Errorf("ID %q after reopening, want %q", again.ID(), id)
	}
	recs, more := again.After(0, 0)
	if diff := cmp.Diff([]uint64{1, 2, 3}, seqs(recs)); diff != "" || more {
		t.Errorf("records after reopening (-want +got):\n%s (more %v)", diff, more)
	}
	if diff := cmp.Diff([]Device{gpu}, recs[0].Devices); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	open := again.OpenIntervals()
	if _, ok := open[IntervalKey{ClaimUID: "b", Start: t0.Add(time.Second)}]; !ok || len(open) != 1 {
		t.Errorf("open intervals %v, want b's only", open)
	}
	mustAppend(t, again, end("b", t0.Add(time.Second), t0.Add(2*time.Minute)))
	if recs, _ := again.After(3, 0); len(recs) != 1 || recs[0].Seq != 4 {
		t.Errorf("after 3: %v, want seq 4", seqs(recs))
	}
}

func TestLedgerRefusesToOpenAnIntervalTwiceOrCloseOneNotOpen(t *testing.T) {
	cases := map[string]struct {
		first, then []Record
		want        string
	}{
		"a second start of an open interval": {first: []Record{start("a", t0)}, then: []Record{start("a", t0)}, want: "already recorded"},
		"a start of a closed interval":       {first: []Record{start("a", t0), end("a", t0, t0.Add(time.Second))}, then: []Record{start("a", t0)}, want: "already recorded"},
		"an end of an interval never opened": {then: []Record{end("a", t0, t0.Add(time.Second))}, want: "not open"},
		"an end twice in one append":         {first: []Record{start("a", t0)}, then: []Record{end("a", t0, t0.Add(time.Second)), end("a", t0, t0.Add(2*time.Second))}, want: "not open"},
		"an end before its start":            {first: []Record{start("a", t0)}, then: []Record{end("a", t0, t0.Add(-time.Second))}, want: "before its interval's start"},
		"an unknown kind":                    {then: []Record{{Kind: "pause", ClaimUID: "a", Time: t0}}, want: `kind "pause", allowed: start, end`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := mustOpen(t, filepath.Join(t.TempDir(), "usage.jsonl"))
			mustAppend(t, l, tc.first...)
			before := l.NextSeq()
			if _, err := l.Append(tc.then...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
			if l.NextSeq() != before {
				t.Errorf("a refused append moved the sequence from %d to %d", before, l.NextSeq())
			}
		})
	}
}

func TestLedgerCutsATornLastLineAndQuarantinesABadOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.jsonl")
	l := mustOpen(t, path)
	mustAppend(t, l, start("a", t0))
	_ = l.Close()
	good, _ := os.ReadFile(path)

	// A crash in the middle of the next append left half a line.
	if err := os.WriteFile(path, append(good, []byte(`{"seq":2,"kind":"end","ti`)...), 0o600); err != nil {
		t.Fatal(err)
	}
	again := mustOpen(t, path)
	if recs, _ := again.After(0, 0); len(recs) != 1 {
		t.Errorf("records %v, want the one before the torn line", seqs(recs))
	}
	mustAppend(t, again, end("a", t0, t0.Add(time.Second)))
	_ = again.Close()
	third := mustOpen(t, path)
	if recs, _ := third.After(0, 0); len(recs) != 2 || recs[1].Seq != 2 {
		t.Errorf("records %v after appending past the cut, want 1 and 2", seqs(recs))
	}
	_ = third.Close()

	// A bad complete line is not a torn append: it is quarantined (see
	// TestADamagedMiddleLineIsQuarantinedAndTheRestKept), naming it.
	raw, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(raw), "\n")
	lines[1] = "{not json}\n"
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if l := mustOpen(t, path); len(l.Quarantined()) != 1 || l.Quarantined()[0].Lines[0] != 2 {
		t.Errorf("quarantined %+v, want line 2", l.Quarantined())
	}
}

func TestCompactDropsOldClosedIntervalsOnlyAndNumbersCarryOn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.jsonl")
	l := mustOpen(t, path)
	mustAppend(t, l, start("old", t0), start("open", t0), end("old", t0, t0.Add(time.Hour)))
	mustAppend(t, l, start("new", t0.Add(2*time.Hour)), end("new", t0.Add(2*time.Hour), t0.Add(3*time.Hour)))

	n, err := l.Compact(t0.Add(2 * time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("compact: %d, %v; want 1 interval dropped", n, err)
	}
	if n, _ := l.Compact(t0.Add(2 * time.Hour)); n != 0 {
		t.Errorf("a second compaction dropped %d", n)
	}
	_ = l.Close()
	again := mustOpen(t, path)
	recs, _ := again.After(0, 0)
	if diff := cmp.Diff([]uint64{2, 4, 5}, seqs(recs)); diff != "" {
		t.Errorf("records after compaction (-want +got):\n%s", diff)
	}
	// Everything closed and dropped: the numbers still carry on.
	mustAppend(t, again, end("open", t0, t0.Add(4*time.Hour)))
	if _, err := again.Compact(t0.Add(24 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	_ = again.Close()
	third := mustOpen(t, path)
	mustAppend(t, third, start("next", t0.Add(25*time.Hour)))
	if recs, _ := third.After(0, 0); len(recs) != 1 || recs[0].Seq != 7 {
		t.Errorf("records %v after compacting everything, want seq 7", seqs(recs))
	}
}

func TestHandlerPagesTheLedger(t *testing.T) {
	l := mustOpen(t, filepath.Join(t.TempDir(), "usage.jsonl"))
	mustAppend(t, l, start("a", t0), start("b", t0), end("a", t0, t0.Add(time.Second)))
	clk := clocktesting.NewFakePassiveClock(t0.Add(time.Minute))
	srv := httptest.NewServer(Handler(l, "node-a", clk))
	defer srv.Close()
	get := func(query string) (int, Page) {
		t.Helper()
		resp, err := http.Get(srv.URL + Path + query)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var p Page
		if resp.StatusCode == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode, p
	}
	_, p := get("?after=1&limit=1")
	if p.Ledger != l.ID() || p.Node != "node-a" || !p.Now.Equal(t0.Add(time.Minute)) || !p.More || len(p.Records) != 1 || p.Records[0].Seq != 2 {
		t.Errorf("page %+v, want record 2 of node-a's ledger with more to come", p)
	}
	if _, p := get("?after=3"); len(p.Records) != 0 || p.More || p.NextSeq != 4 {
		t.Errorf("page %+v, want no records and next seq 4", p)
	}
	for _, bad := range []string{"?after=-1", "?limit=0", "?limit=x"} {
		if code, _ := get(bad); code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", bad, code)
		}
	}
}

func TestADamagedMiddleLineIsQuarantinedAndTheRestKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.jsonl")
	l := mustOpen(t, path)
	mustAppend(t, l, start("a", t0), start("b", t0.Add(time.Second)), end("a", t0, t0.Add(time.Minute)))
	id := l.ID()
	_ = l.Close()
	raw, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(raw), "\n")
	lines[2] = "{\"seq\":2,\"kind\":\x00\x00 bit rot}\n" // b's start
	damaged := strings.Join(lines, "")
	if err := os.WriteFile(path, []byte(damaged), 0o600); err != nil {
		t.Fatal(err)
	}

	again := mustOpen(t, path)
	if again.ID() != id {
		t.Errorf("ID %q, want %q kept: the header was readable", again.ID(), id)
	}
	if recs, _ := again.After(0, 0); !cmp.Equal(seqs(recs), []uint64{1, 3}) {
		t.Errorf("records %v, want the readable ones 1 and 3", seqs(recs))
	}
	q := again.Quarantined()
	if len(q) != 1 || !cmp.Equal(q[0].Lines, []int{3}) {
		t.Fatalf("quarantined %+v, want one file naming line 3", q)
	}
	if kept, err := os.ReadFile(q[0].File); err != nil || string(kept) != damaged {
		t.Errorf("the quarantined file %s does not hold the damaged ledger as it was (err %v)", q[0].File, err)
	}
	// The ledger goes on: numbers carry on after the damaged line's.
	mustAppend(t, again, start("c", t0.Add(2*time.Minute)))
	if next := again.NextSeq(); next != 5 {
		t.Errorf("next seq %d, want 5", next)
	}
	_ = again.Close()
	if third := mustOpen(t, path); len(third.Quarantined()) != 0 {
		t.Errorf("the rewritten ledger was quarantined again: %+v", third.Quarantined())
	}
}

func TestAnotherNodesLedgerIsQuarantinedAndANewOneStarted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.jsonl")
	a, err := Open(path, Options{Node: "node-a"})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, a, start("a", t0))
	id := a.ID()
	_ = a.Close()
	// Node B boots from a copy of A's disk.
	b, err := Open(path, Options{Node: "node-b", Clock: clocktesting.NewFakeClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	if b.ID() == id || b.Node() != "node-b" {
		t.Errorf("ledger %s of %s, want a new ID of node-b", b.ID(), b.Node())
	}
	if recs, _ := b.After(0, 0); len(recs) != 0 {
		t.Errorf("records %v: node A's were kept", seqs(recs))
	}
	if q := b.Quarantined(); len(q) != 1 || !strings.Contains(q[0].Reason, "created by node node-a") {
		t.Errorf("quarantined %+v, want A's file naming node-a", q)
	}
}
