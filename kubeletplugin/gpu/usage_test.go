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

package gpu

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
	"github.com/computedomain-operator/computedomain-operator/internal/usage"
)

// interval is one claim's usage as its node's ledger says.
type interval struct {
	Claim      string
	Start, End time.Time // End zero: open
}

func ledgerIntervals(t *testing.T, e *testNodeEnv) ([]interval, []usage.Record) {
	t.Helper()
	l, err := usage.Open(e.usage, usage.Options{Node: testNode})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	recs, _ := l.After(0, 0)
	var out []interval
	index := map[usage.IntervalKey]int{}
	for _, r := range recs {
		k := usage.IntervalKey{ClaimUID: r.ClaimUID, Start: r.Start}
		switch r.Kind {
		case usage.KindStart:
			index[k] = len(out)
			out = append(out, interval{Claim: r.ClaimUID, Start: r.Start})
		case usage.KindEnd:
			out[index[k]].End = r.Time
		}
	}
	return out, recs
}

// crashAt makes the driver panic at point (once) and reports whether it did.
func crashAt(d *Driver, point string, call func()) (crashed bool) {
	d.state.crash = func(p string) bool { return p == point }
	defer func() {
		d.state.crash = nil
		if r := recover(); r != nil {
			err, ok := r.(error)
			if !ok || !errors.Is(err, draplugin.ErrSimulatedCrash) {
				panic(r)
			}
			crashed = true
		}
	}()
	call()
	return false
}

func TestUsageIntervalOfAClaimOutlivesPluginRestarts(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver()
	t0 := e.clock.Now()
	claim := utiltesting.MakeResourceClaim("train", "default").UID("uid-train").Request("gpu", "gpu.nvidia.com").Device("gpu", testDriver, testNode, "gpu-3").Obj()
	if _, err := prepareOne(t, d, claim); err != nil {
		t.Fatal(err)
	}
	// The plugin restarts and the kubelet prepares the claim again, twice.
	e.clock.Step(30 * time.Second)
	d = e.mustDriver()
	for range 2 {
		if _, err := prepareOne(t, d, claim); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Step(60 * time.Second)
	if err := unprepare(t, d, "uid-train")["uid-train"]; err != nil {
		t.Fatal(err)
	}
	// And once more after the claim is gone.
	d = e.mustDriver()
	got, recs := ledgerIntervals(t, e)
	if diff := cmp.Diff([]interval{{Claim: "uid-train", Start: t0, End: t0.Add(90 * time.Second)}}, got); diff != "" {
		t.Errorf("intervals (-want +got):\n%s", diff)
	}
	want := []usage.Device{{Name: "gpu-3", Class: "gpu.nvidia.com", Type: "gpu", UUID: gpuUUIDOf(t, d, 3), ParentUUID: gpuUUIDOf(t, d, 3), MemoryBytes: d.Inventory().GPUs[3].MemoryBytes}}
	if diff := cmp.Diff(want, recs[0].Devices); diff != "" || recs[0].Namespace != "default" || recs[0].Name != "train" {
		t.Errorf("start record of %s/%s, devices (-want +got):\n%s", recs[0].Namespace, recs[0].Name, diff)
	}
	if want[0].MemoryBytes == 0 {
		t.Error("the H100's memory is unknown")
	}
}

func TestUsageAfterACrashBetweenPrepareAndItsLedgerRecord(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver()
	t0 := e.clock.Now()
	claim := utiltesting.MakeResourceClaim("train", "default").UID("uid-train").Device("gpu", testDriver, testNode, "gpu-0").Obj()
	// The checkpoint says prepared; the ledger's start is not written yet.
	if !crashAt(d, "usage-pending", func() { _, _ = prepareOne(t, d, claim) }) {
		t.Fatal("no crash at usage-pending")
	}
	if got, _ := ledgerIntervals(t, e); len(got) != 0 {
		t.Fatalf("intervals %v before the restart, want none", got)
	}
	e.clock.Step(time.Minute)
	d = e.mustDriver()
	if _, err := prepareOne(t, d, claim); err != nil {
		t.Fatal(err)
	}
	// Billed from the prepare the kubelet saw succeed... wait, it crashed:
	// from the moment the devices were ready, once.
	got, _ := ledgerIntervals(t, e)
	if diff := cmp.Diff([]interval{{Claim: "uid-train", Start: t0}}, got); diff != "" {
		t.Errorf("intervals (-want +got):\n%s", diff)
	}
}

func TestUsageAfterACrashBetweenTheEndRecordAndForgettingTheClaim(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver()
	t0 := e.clock.Now()
	claim := utiltesting.MakeResourceClaim("train", "default").UID("uid-train").Device("gpu", testDriver, testNode, "gpu-0").Obj()
	if _, err := prepareOne(t, d, claim); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(time.Minute)
	if !crashAt(d, "unprepare-usage-ended", func() { unprepare(t, d, "uid-train") }) {
		t.Fatal("no crash at unprepare-usage-ended")
	}
	// The checkpoint still has the claim prepared; its interval is closed
	// and must stay closed through the restart and the repeated unprepare.
	e.clock.Step(time.Minute)
	d = e.mustDriver()
	if err := unprepare(t, d, "uid-train")["uid-train"]; err != nil {
		t.Fatal(err)
	}
	got, _ := ledgerIntervals(t, e)
	if diff := cmp.Diff([]interval{{Claim: "uid-train", Start: t0, End: t0.Add(time.Minute)}}, got); diff != "" {
		t.Errorf("intervals (-want +got):\n%s", diff)
	}
}

func TestUsageOfAClaimPreparedAgainAfterAnUnfinishedUnprepare(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver()
	t0 := e.clock.Now()
	claim := utiltesting.MakeResourceClaim("shared", "default").UID("uid-shared").Device("gpu", testDriver, testNode, "gpu-0").Obj()
	if _, err := prepareOne(t, d, claim); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(time.Minute)
	if !crashAt(d, "unprepare-usage-ended", func() { unprepare(t, d, "uid-shared") }) {
		t.Fatal("no crash at unprepare-usage-ended")
	}
	// A new pod uses the claim before the kubelet retried the unprepare.
	e.clock.Step(time.Minute)
	d = e.mustDriver()
	if _, err := prepareOne(t, d, claim); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(time.Minute)
	if err := unprepare(t, d, "uid-shared")["uid-shared"]; err != nil {
		t.Fatal(err)
	}
	got, _ := ledgerIntervals(t, e)
	want := []interval{
		{Claim: "uid-shared", Start: t0, End: t0.Add(time.Minute)},
		{Claim: "uid-shared", Start: t0.Add(2 * time.Minute), End: t0.Add(3 * time.Minute)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("intervals (-want +got):\n%s", diff)
	}
}

func TestUsageOfAClaimPreparedBeforeTheLedgerExisted(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	noLedger := func(_ *Config, deps *Deps) { deps.Usage = nil }
	d := e.mustDriver(noLedger)
	if _, err := prepareOne(t, d, utiltesting.MakeResourceClaim("old", "default").UID("uid-old").Device("gpu", testDriver, testNode, "gpu-0").Obj()); err != nil {
		t.Fatal(err)
	}
	if got, _ := ledgerIntervals(t, e); len(got) != 0 {
		t.Fatalf("intervals %v without a ledger", got)
	}
	// A checkpoint of a plugin without a ledger has no PreparedAt.
	cs := loadState(t, e).Claims["uid-old"]
	cs.PreparedAt = time.Time{}
	if err := d.state.ledger.SaveClaim("uid-old", cs); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(time.Minute)
	upgradedAt := e.clock.Now()
	e.mustDriver()
	e.clock.Step(time.Minute)
	e.mustDriver()
	got, _ := ledgerIntervals(t, e)
	if diff := cmp.Diff([]interval{{Claim: "uid-old", Start: upgradedAt}}, got); diff != "" {
		t.Errorf("intervals (-want +got):\n%s", diff)
	}
}

func TestUsageRecordsMIGProfilesSharingAndAdminAccess(t *testing.T) {
	e := newTestNodeEnv(t, "a100-40gb-mig", withDynamicMIG())
	d := e.mustDriver()
	claim := fourSmallPartitions(t, d).Request("mig", "mig-1g.5gb.nvidia.com").Obj()
	if _, err := prepareOne(t, d, claim); err != nil {
		t.Fatal(err)
	}
	monitor := utiltesting.MakeResourceClaim("monitor", "default").UID("uid-monitor").Device("gpu", testDriver, testNode, "gpu-0").Obj()
	if _, err := prepareOne(t, d, monitor); err != nil {
		t.Fatal(err)
	}
	_, recs := ledgerIntervals(t, e)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2 starts", len(recs))
	}
	for _, dev := range recs[0].Devices {
		if dev.Type != "mig" || dev.Profile != "1g.5gb" || dev.MemorySlices != 1 || dev.ParentMemorySlices != 8 && dev.ParentMemorySlices != 7 || dev.MemoryBytes == 0 || dev.UUID == "" || dev.Class != "mig-1g.5gb.nvidia.com" {
			t.Errorf("MIG device %+v: want a 1g.5gb of 1 memory slice with its memory, UUID and class", dev)
		}
	}

	h := newTestNodeEnv(t, "hgx-h100-8")
	hd := h.mustDriver()
	ts := utiltesting.MakeResourceClaim("ts", "default").UID("uid-ts").Device("gpu", testDriver, testNode, "gpu-1").Config(resourceapi.AllocationConfigSourceClaim, testDriver, tsLong).Obj()
	owner := utiltesting.MakeResourceClaim("owner", "default").UID("uid-owner").Device("gpu", testDriver, testNode, "gpu-2").Obj()
	admin := utiltesting.MakeResourceClaim("admin", "default").UID("uid-admin").Device("gpu", testDriver, testNode, "gpu-2").AdminAccess().Obj()
	for _, c := range []*resourceapi.ResourceClaim{ts, owner, admin} {
		if _, err := prepareOne(t, hd, c); err != nil {
			t.Fatal(err)
		}
	}
	_, recs = ledgerIntervals(t, h)
	byClaim := map[string]usage.Device{}
	for _, r := range recs {
		byClaim[r.Name] = r.Devices[0]
	}
	if byClaim["ts"].Sharing != "TimeSlicing" || byClaim["owner"].Sharing != "" || byClaim["owner"].AdminAccess || !byClaim["admin"].AdminAccess {
		t.Errorf("devices %+v: want ts time-sliced, owner exclusive, admin marked admin access", byClaim)
	}
}

func TestADamagedUsageLedgerDoesNotStopThePlugin(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver()
	t0 := e.clock.Now()
	train := utiltesting.MakeResourceClaim("train", "default").UID("uid-train").Device("gpu", testDriver, testNode, "gpu-0").Obj()
	eval := utiltesting.MakeResourceClaim("eval", "default").UID("uid-eval").Device("gpu", testDriver, testNode, "gpu-1").Obj()
	for _, c := range []*resourceapi.ResourceClaim{train, eval} {
		if _, err := prepareOne(t, d, c); err != nil {
			t.Fatal(err)
		}
	}
	// Bit rot in the middle of the file (train's start), then a restart.
	raw, err := os.ReadFile(e.usage)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(raw), "\n")
	lines[1] = "{\"seq\":1,\x00\x00\n"
	if err := os.WriteFile(e.usage, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(time.Minute)
	reg := prometheus.NewRegistry()
	d = e.mustDriver(func(_ *Config, deps *Deps) { deps.Metrics = NewMetrics(reg) })
	// The node keeps preparing and unpreparing.
	if err := unprepare(t, d, "uid-eval")["uid-eval"]; err != nil {
		t.Fatal(err)
	}
	if _, err := prepareOne(t, d, utiltesting.MakeResourceClaim("next", "default").UID("uid-next").Device("gpu", testDriver, testNode, "gpu-1").Obj()); err != nil {
		t.Fatal(err)
	}
	// What could be read is kept; the sync wrote train's lost start again
	// from the checkpoint.
	got, _ := ledgerIntervals(t, e)
	want := []interval{
		{Claim: "uid-eval", Start: t0, End: t0.Add(time.Minute)},
		{Claim: "uid-train", Start: t0},
		{Claim: "uid-next", Start: t0.Add(time.Minute)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("intervals (-want +got):\n%s", diff)
	}
	if q, _ := filepath.Glob(e.usage + ".damaged-*"); len(q) != 1 {
		t.Errorf("quarantined files %v, want one next to the ledger", q)
	}
	if got := metricValue(t, reg, "gpu_kubelet_plugin_usage_ledger_quarantined_files", "", ""); got != 1 {
		t.Errorf("quarantined-ledger metric %v, want 1", got)
	}
}
