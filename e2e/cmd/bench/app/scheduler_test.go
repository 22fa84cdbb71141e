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
	"io"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
)

// TestBenchSchedulerRunsAndReportsBothSliceSets is bench scheduler's reduced run in the test suite (make
// bench runs it at 500 nodes): on 20 nodes a fresh kube-scheduler binds 40 one-device pods per slice set
// and variant, every claim allocated, and the figures are sane. Not a timing goal: the machine is shared.
func TestBenchSchedulerRunsAndReportsBothSliceSets(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	o := schedBenchOptions{nodes: 20, pods: 40, runs: 1, workers: 8, variants: []string{"gpu", "mig"}, timeout: 2 * time.Minute}
	runs, stats, err := benchScheduler(ctx, o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 6 {
		t.Fatalf("%d measurements, want 6 (2 variants × 3 slice sets)", len(runs))
	}
	for _, r := range runs {
		if r.pods != 40 || r.podsPerSecond() <= 0 || r.firstToLast > r.sinceStart {
			t.Errorf("%s/%s: %d pods, %.1f pods/s, first→last %s, start→last %s", r.variant, r.slices, r.pods, r.podsPerSecond(), r.firstToLast, r.sinceStart)
		}
	}
	for _, variant := range o.variants {
		ours, minimal := stats[variant+"/"+slicesPlugin], stats[variant+"/"+slicesMinimal]
		if ours.devices == 0 || minimal.devices != ours.devices {
			t.Errorf("%s: %d devices in our slices, %d in the minimal set: want the same, more than 0", variant, ours.devices, minimal.devices)
		}
		if minimal.attributes != minimal.devices || ours.attributes <= ours.devices {
			t.Errorf("%s: %d attributes in our slices, %d in the minimal set of %d devices", variant, ours.attributes, minimal.attributes, minimal.devices)
		}
		// NVIDIA's names only: fewer than ours (no cliqueID, no NUMA node), more than the type alone.
		if nv := stats[variant+"/"+slicesNVIDIA]; nv.devices != ours.devices || nv.attributes >= ours.attributes || nv.attributes <= nv.devices {
			t.Errorf("%s: %d attributes with NVIDIA's names only, %d in ours, over %d devices", variant, nv.attributes, ours.attributes, nv.devices)
		}
	}
	if want := 20 * 4; stats["gpu/"+slicesPlugin].devices != want {
		t.Errorf("gb200 nodes publish %d GPUs, want %d", stats["gpu/"+slicesPlugin].devices, want)
	}
	var out bytes.Buffer
	printSchedulerTable(&out, o, runs, stats)
	if !strings.Contains(out.String(), "RATIO") || strings.Count(out.String(), "\nmig ") != 3 {
		t.Errorf("table:\n%s", out.String())
	}
}
