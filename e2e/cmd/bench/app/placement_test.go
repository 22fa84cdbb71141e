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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestWritePlacementTable(t *testing.T) {
	results := []placementRun{
		{variant: "affinity", run: 0, bound: 300 * time.Millisecond, placed: map[string]int{"c.0": 16}},
		{variant: "gang", run: 0, bound: 700 * time.Millisecond, placed: map[string]int{"c.1": 16}},
		{variant: "gang", run: 1, bound: 500 * time.Millisecond, placed: map[string]int{"c.2": 16}},
		{variant: "affinity", run: 1, bound: 900 * time.Millisecond, placed: map[string]int{"c.0": 15, "c.1": 1}},
		{variant: "affinity", run: 2, bound: 200 * time.Millisecond, placed: map[string]int{"c.3": 16}},
		{variant: "gang", run: 2, bound: 600 * time.Millisecond, placed: map[string]int{"c.3": 16}},
	}
	var out strings.Builder
	if err := writePlacementTable(&out, results); err != nil {
		t.Fatal(err)
	}
	// The table's rows, read by their values (not their spacing): "<variant> <run> <bound> <cliques>", and
	// "<variant> median <bound>".
	rows := map[string][]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] == "VARIANT" {
			continue
		}
		rows[f[0]+" "+f[1]] = f[2:]
	}
	want := map[string][]string{
		"affinity 0": {"0.30s", "1"}, "affinity 1": {"0.90s", "2"}, "affinity 2": {"0.20s", "1"}, "affinity median": {"0.30s"},
		"gang 0": {"0.70s", "1"}, "gang 1": {"0.50s", "1"}, "gang 2": {"0.60s", "1"}, "gang median": {"0.60s"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("table rows (-want +got), a run split over two cliques shows 2 cliques:\n%s\n%s", diff, out.String())
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
	if diff := cmp.Diff([]string{"affinity", "gang", "webhook-gang"}, names(variantsFor(true))); diff != "" {
		t.Errorf("with the Workload API (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"affinity", "clique-fallback"}, names(variantsFor(false))); diff != "" {
		t.Errorf("without the Workload API (-want +got):\n%s", diff)
	}
}
