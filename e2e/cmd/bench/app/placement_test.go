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

package app

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2/ktesting"

	"github.com/computedomain-operator/computedomain-operator/internal/sliceplan"
)

// tableRows reads a placement table by its values (not its spacing): the first two fields of a row are its key.
func tableRows(table string) map[string][]string {
	rows := map[string][]string{}
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] == "VARIANT" {
			continue
		}
		rows[f[0]+" "+f[1]] = f[2:]
	}
	return rows
}

func TestWritePlacementTable(t *testing.T) {
	run := func(variant string, run int, bound, running, sched, proc time.Duration, placed map[string]int, whole, blocks int) placementRun {
		return placementRun{variant: variant, run: run, bound: bound, running: running, cpu: cpuTimes{scheduler: sched, process: proc},
			check: placementCheck{placed: placed, wholeBlocks: whole, blocks: blocks}}
	}
	const ms = time.Millisecond
	four := map[string]int{"c.0": 16, "c.1": 16, "c.2": 16, "c.3": 16}
	spread := map[string]int{"c.0": 18, "c.1": 18, "c.2": 18, "c.3": 10}
	results := []placementRun{
		run("slices", 0, 2000*ms, 4000*ms, 1000*ms, 8000*ms, four, 4, 4),
		run("no-slices", 0, 1000*ms, 2000*ms, 500*ms, 6000*ms, spread, 0, 4),
		run("no-slices", 1, 1500*ms, 3000*ms, 400*ms, 7000*ms, spread, 1, 4),
		run("slices", 1, 3000*ms, 6000*ms, 1200*ms, 9000*ms, four, 4, 4),
		// The last run of slices never had all its pods Running: no figure, no ratio.
		run("slices", 2, 2500*ms, 0, 1100*ms, 8500*ms, four, 4, 4),
		run("no-slices", 2, 1200*ms, 2500*ms, 450*ms, 6500*ms, spread, 0, 4),
	}
	var out strings.Builder
	if err := writePlacementTable(&out, results, variantsFor(true, true)); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"slices 0":    {"2.00s", "4.00s", "1.00s", "8.00s", "4", "yes", "4/4"},
		"slices 1":    {"3.00s", "6.00s", "1.20s", "9.00s", "4", "yes", "4/4"},
		"slices 2":    {"2.50s", "-", "1.10s", "8.50s", "4", "yes", "4/4"},
		"no-slices 0": {"1.00s", "2.00s", "0.50s", "6.00s", "4", "no", "0/4"},
		"no-slices 1": {"1.50s", "3.00s", "0.40s", "7.00s", "4", "no", "1/4"},
		"no-slices 2": {"1.20s", "2.50s", "0.45s", "6.50s", "4", "no", "0/4"},
		// Medians of the runs that reached the phase (the upper of two).
		"slices median":    {"2.50s", "6.00s", "1.10s", "8.50s"},
		"no-slices median": {"1.20s", "2.50s", "0.45s", "6.50s"},
		// Ratios within a run, then their median.
		"slices/no-slices 0":      {"2.00", "2.00", "2.00", "1.33"},
		"slices/no-slices 1":      {"2.00", "2.00", "3.00", "1.29"},
		"slices/no-slices 2":      {"2.08", "-", "2.44", "1.31"},
		"slices/no-slices median": {"2.00", "2.00", "2.44", "1.31"},
	}
	if diff := cmp.Diff(want, tableRows(out.String())); diff != "" {
		t.Errorf("table rows (-want +got):\n%s\n%s", diff, out.String())
	}
}

func TestPlacementVariantsPerCluster(t *testing.T) {
	names := func(vs []placementVariant) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.name)
		}
		return out
	}
	for name, tc := range map[string]struct {
		workloadAPI, multiRack bool
		want                   []string
	}{
		"one rack with the Workload API":    {workloadAPI: true, want: []string{"affinity", "gang", "webhook-gang"}},
		"one rack without the Workload API": {want: []string{"affinity", "clique-fallback"}},
		"racks with the Workload API":       {workloadAPI: true, multiRack: true, want: []string{"slices", "no-slices"}},
		"racks without the Workload API":    {multiRack: true, want: []string{"slices", "no-slices"}},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, names(variantsFor(tc.workloadAPI, tc.multiRack))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckPlacementFindsBlocksSplitAcrossCliques(t *testing.T) {
	plan, err := sliceplan.New(8, 4, 0) // ranks 0-3 and 4-7
	if err != nil {
		t.Fatal(err)
	}
	pods := func(cliques ...string) []boundPod {
		var out []boundPod
		for rank, c := range cliques {
			if c != "" {
				out = append(out, boundPod{rank: rank, clique: c})
			}
		}
		return out
	}
	for name, tc := range map[string]struct {
		pods       []boundPod
		whole      int
		cliques    int
		contiguous bool
	}{
		"each block in a clique of its own":  {pods: pods("a", "a", "a", "a", "b", "b", "b", "b"), whole: 2, cliques: 2, contiguous: true},
		"ranks interleaved over two cliques": {pods: pods("a", "b", "a", "b", "a", "b", "a", "b"), whole: 0, cliques: 2},
		"one block split, one whole":         {pods: pods("a", "a", "a", "a", "b", "b", "c", "c"), whole: 1, cliques: 3},
		"a rank not bound":                   {pods: pods("a", "a", "a", "", "b", "b", "b", "b"), whole: 1, cliques: 2},
		"a pod without a rank is counted in its clique": {pods: append(pods("a", "a", "a", "a", "b", "b", "b", "b"), boundPod{rank: -1, clique: "c"}),
			whole: 2, cliques: 3, contiguous: true},
	} {
		t.Run(name, func(t *testing.T) {
			c := checkPlacement(plan, tc.pods)
			if c.wholeBlocks != tc.whole || c.blocks != 2 || len(c.placed) != tc.cliques || c.contiguous() != tc.contiguous {
				t.Errorf("whole blocks %d of %d, %d cliques, contiguous %v; want %d of 2, %d, %v", c.wholeBlocks, c.blocks, len(c.placed), c.contiguous(), tc.whole, tc.cliques, tc.contiguous)
			}
		})
	}
}

// TestBenchPlacementRunsSlicesOverRacks is bench placement's reduced multi-rack run in the test suite (make bench
// runs 64 nodes on 4 racks × 18 and 256 on 16): an 8-node job over 3 racks of 4 trays, placed in 2 slices and
// without them, one run each. It checks that the benchmark runs and reports; not a timing goal (the machine is
// shared).
func TestBenchPlacementRunsSlicesOverRacks(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 6*time.Minute)
	defer cancel()
	var out, log bytes.Buffer
	err := Run(ctx, []string{"placement", "--racks", "3", "--nodes-per-rack", "4", "--nodes", "8", "--runs", "1", "--timeout", "2m"}, &out, &log)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out.String(), log.String())
	}
	rows := tableRows(out.String())
	slices, noSlices := rows["slices 0"], rows["no-slices 0"]
	if len(slices) != 7 || len(noSlices) != 7 {
		t.Fatalf("want a row of 7 figures for each variant:\n%s", out.String())
	}
	// The slices' run: 2 cliques, each block of 4 consecutive ranks whole in one.
	if diff := cmp.Diff([]string{"2", "yes", "2/2"}, slices[4:]); diff != "" {
		t.Errorf("slices' placement (cliques, contiguous, whole blocks) (-want +got):\n%s\n%s", diff, out.String())
	}
	// Job → bound, → Running and the process's CPU are positive; the scheduler's CPU may round to 0 for 8 pods.
	for name, row := range map[string][]string{"slices": slices, "no-slices": noSlices} {
		for i, f := range row[:4] {
			if d, err := time.ParseDuration(f); err != nil || d < 0 || (d == 0 && i != 2) {
				t.Errorf("%s: figure %d is %q, want a positive duration\n%s", name, i, f, out.String())
			}
		}
	}
	if _, ok := rows["slices/no-slices median"]; !ok {
		t.Errorf("no ratio row:\n%s", out.String())
	}
}
