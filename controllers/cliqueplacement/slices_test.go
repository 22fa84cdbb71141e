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

package cliqueplacement

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/sliceplan"
)

// racks are four NVL72 racks of 18 trays, as in the acceptance stories.
var racks = []string{"r0", "r1", "r2", "r3"}

// cliquesByRank is where each ranked pod of the fixture's namespace was released ("held" while held).
func (f *placementFixture) cliquesByRank() map[int]string {
	f.t.Helper()
	var pods corev1.PodList
	if err := f.c.List(context.Background(), &pods, client.InNamespace(f.domain.Namespace)); err != nil {
		f.t.Fatal(err)
	}
	out := map[int]string{}
	for _, p := range pods.Items {
		rank, err := strconv.Atoi(p.Labels[sliceplan.JobCompletionIndex])
		if err != nil {
			continue
		}
		out[rank] = "held"
		if !held(&p) {
			out[rank] = p.Annotations[v1beta1.PlacementCliqueAnnotationKey]
		}
	}
	return out
}

// checkContiguous fails unless each block of 16 consecutive ranks is in one clique, and the blocks in distinct ones.
func checkContiguous(t *testing.T, where map[int]string, n, size int) {
	t.Helper()
	used := map[string]int{}
	for first := 0; first < n; first += size {
		clique := where[first]
		for r := first; r < first+size; r++ {
			if where[r] != clique || clique == "held" || clique == "" {
				t.Fatalf("rank %d in %q, want the clique of rank %d (%q): %v", r, where[r], first, clique, where)
			}
		}
		if prev, ok := used[clique]; ok {
			t.Fatalf("ranks %d.. and %d.. share clique %s", prev, first, clique)
		}
		used[clique] = first
	}
}

func TestSlicedDomainWaitsForAllItsPodsThenReleasesEachSliceIntoItsOwnClique(t *testing.T) {
	// 2 busy trays in each rack: 16 free in every one.
	f := newFixture(t, racks, 18, map[string]int{"r0": 2, "r1": 2, "r2": 2, "r3": 2}, 64)
	for r := range 63 {
		f.rankedPod(fmt.Sprintf("job-%d", r), r, "")
	}
	placement, _ := f.reconcile()
	if placement.Reason != v1beta1.ComputeDomainReasonWaitingForPods || !strings.Contains(placement.Message, "63 of the domain's 64 pods") ||
		!strings.Contains(placement.Message, "as 4 slices (4 × 16)") {
		t.Fatalf("63 of 64 pods: %s: %s", placement.Reason, placement.Message)
	}
	for r, c := range f.cliquesByRank() {
		if c != "held" {
			t.Fatalf("rank %d released into %s before all pods exist", r, c)
		}
	}
	f.rankedPod("job-63", 63, "")
	placement, _ = f.reconcile()
	if placement.Reason != v1beta1.ComputeDomainReasonSliceAffinity || !strings.Contains(placement.Message, "ranks 0-15 in r") {
		t.Fatalf("placement %s: %s", placement.Reason, placement.Message)
	}
	checkContiguous(t, f.cliquesByRank(), 64, 16)
}

func TestSlicedDomainStaysHeldWhileOnlyThreeRacksHaveRoomAndSaysTheNumbers(t *testing.T) {
	f := newFixture(t, racks, 18, map[string]int{"r0": 2, "r1": 2, "r2": 2, "r3": 3}, 64)
	for r := range 64 {
		f.rankedPod(fmt.Sprintf("job-%d", r), r, "")
	}
	placement, _ := f.reconcile()
	if placement.Reason != v1beta1.ComputeDomainReasonNoCliqueFree ||
		!strings.Contains(placement.Message, "need 4 NVLink cliques with 16 free nodes each, found 3") ||
		!strings.Contains(placement.Message, "r3: 15") || placement.Unschedulable == "" {
		t.Fatalf("placement %s: %s", placement.Reason, placement.Message)
	}
	for r, c := range f.cliquesByRank() {
		if c != "held" {
			t.Fatalf("rank %d released into %s while a slice has no clique", r, c)
		}
	}
}

// A pod that replaces a failed one (same rank, a new pod) follows its slice's pods into their clique, though a
// fresh pick would choose another (here only r3 has any free tray left).
func TestAReplacementPodReturnsToItsSlicesClique(t *testing.T) {
	f := newFixture(t, racks, 18, map[string]int{"r0": 2, "r1": 2, "r2": 2, "r3": 0}, 48)
	for r := range 48 {
		if r == 20 {
			continue
		}
		f.rankedPod(fmt.Sprintf("job-%d", r), r, racks[r/16])
	}
	f.rankedPod("job-20-retry", 20, "")
	placement, _ := f.reconcile()
	if placement.Reason != v1beta1.ComputeDomainReasonSliceAffinity {
		t.Fatalf("placement %s: %s", placement.Reason, placement.Message)
	}
	if got := f.cliquesByRank()[20]; got != "r1" {
		t.Errorf("the replacement of rank 20 went to %q, want r1 with ranks 16-31", got)
	}
}

// Pods without a rank (a workload that carries none) fill the slices in name order: still whole slices, each in
// its own clique.
func TestRanklessPodsFillTheSlices(t *testing.T) {
	f := newFixture(t, racks, 18, nil, 36)
	for i := range 36 {
		f.pod(fmt.Sprintf("worker-%02d", i), "")
	}
	placement, where := f.reconcile()
	if placement.Reason != v1beta1.ComputeDomainReasonSliceAffinity {
		t.Fatalf("placement %s: %s", placement.Reason, placement.Message)
	}
	count := map[string]int{}
	for _, c := range where {
		count[c]++
	}
	if len(count) != 2 {
		t.Errorf("36 pods in 2 slices of 18: cliques %v", count)
	}
	for c, n := range count {
		if n != 18 {
			t.Errorf("clique %s holds %d pods, want 18: %v", c, n, count)
		}
	}
}
