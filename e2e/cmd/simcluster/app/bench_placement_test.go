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
	var medians []string
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[1] == "median" {
			medians = append(medians, f[0]+" "+f[2])
		}
	}
	if diff := cmp.Diff([]string{"affinity 0.30s", "gang 0.60s"}, medians); diff != "" {
		t.Errorf("medians (-want +got):\n%s\n%s", diff, out.String())
	}
	if !strings.Contains(out.String(), "affinity  1       0.90s          2") {
		t.Errorf("a run split over two cliques shows 2 cliques:\n%s", out.String())
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
