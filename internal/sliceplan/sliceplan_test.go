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

package sliceplan

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNewPlansContiguousSlicesThatFitAClique(t *testing.T) {
	cases := map[string]struct {
		nodes, perClique, sliceSize int
		want                        []Slice
	}{
		"a job of one rack is one slice": {nodes: 16, perClique: 18, want: []Slice{{0, 0, 16}}},
		"a full rack is one slice":       {nodes: 18, perClique: 18, want: []Slice{{0, 0, 18}}},
		"64 nodes over racks of 18 are four slices of 16, lowest ranks first": {nodes: 64, perClique: 18,
			want: []Slice{{0, 0, 16}, {1, 16, 16}, {2, 32, 16}, {3, 48, 16}}},
		"40 nodes are 14, 13, 13: sizes differ by at most one, the first slices larger": {nodes: 40, perClique: 18,
			want: []Slice{{0, 0, 14}, {1, 14, 13}, {2, 27, 13}}},
		"19 nodes need two cliques": {nodes: 19, perClique: 18, want: []Slice{{0, 0, 10}, {1, 10, 9}}},
		"a chosen slice size of 8 makes eight slices of 64": {nodes: 64, perClique: 18, sliceSize: 8,
			want: []Slice{{0, 0, 8}, {1, 8, 8}, {2, 16, 8}, {3, 24, 8}, {4, 32, 8}, {5, 40, 8}, {6, 48, 8}, {7, 56, 8}}},
		"a chosen slice size equal to the job is one slice": {nodes: 16, perClique: 18, sliceSize: 16, want: []Slice{{0, 0, 16}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := New(tc.nodes, tc.perClique, tc.sliceSize)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, p.Slices); diff != "" {
				t.Errorf("slices (-want +got):\n%s", diff)
			}
			if p.Nodes() != tc.nodes {
				t.Errorf("the plan covers %d nodes, want %d", p.Nodes(), tc.nodes)
			}
			for _, s := range p.Slices {
				if s.Size > tc.perClique {
					t.Errorf("%s is larger than a clique of %d", s, tc.perClique)
				}
			}
		})
	}
}

func TestNewRefusesWhatCanNeverBePlacedNamingTheField(t *testing.T) {
	cases := map[string]struct {
		nodes, perClique, sliceSize int
		want                        string
	}{
		"no nodes":                     {nodes: 0, perClique: 18, want: "spec.numNodes 0"},
		"a slice larger than a rack":   {nodes: 40, perClique: 18, sliceSize: 20, want: "spec.sliceSize 20: larger than a clique's IMEX ensemble (18 nodes)"},
		"a slice that does not divide": {nodes: 64, perClique: 18, sliceSize: 12, want: "spec.sliceSize 12: does not divide spec.numNodes 64"},
		"a negative slice size":        {nodes: 64, perClique: 18, sliceSize: -1, want: "spec.sliceSize -1"},
		"cliques of no nodes":          {nodes: 4, perClique: 0, want: "clique size 0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := New(tc.nodes, tc.perClique, tc.sliceSize)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New(%d, %d, %d) = %v, want an error with %q", tc.nodes, tc.perClique, tc.sliceSize, err, tc.want)
			}
		})
	}
}

func TestSliceOfFindsTheSliceOfEveryRankAndNoOther(t *testing.T) {
	p, err := New(40, 18, 0)
	if err != nil {
		t.Fatal(err)
	}
	for rank := range 40 {
		s, ok := p.SliceOf(rank)
		if !ok || !s.Contains(rank) {
			t.Fatalf("rank %d: %v %v", rank, s, ok)
		}
		// Consecutive ranks share a slice except at its bounds.
		if next, _ := p.SliceOf(rank + 1); rank+1 < 40 && next.Index != s.Index && rank != s.Last() {
			t.Errorf("ranks %d and %d are in slices %d and %d", rank, rank+1, s.Index, next.Index)
		}
	}
	for _, rank := range []int{-1, 40, 1000} {
		if s, ok := p.SliceOf(rank); ok {
			t.Errorf("rank %d is in %v, want none", rank, s)
		}
	}
}

func TestAssignPutsEachSliceInItsOwnCliqueOrNone(t *testing.T) {
	four := func() Plan { p, _ := New(64, 18, 0); return p }()
	cases := map[string]struct {
		plan Plan
		free map[string]int
		want map[int]string
		// short is the shortfall when nothing can be placed.
		short *Shortfall
	}{
		"four racks with 16 free each": {plan: four, free: map[string]int{"a": 18, "b": 16, "c": 17, "d": 16},
			want: map[int]string{0: "b", 1: "d", 2: "c", 3: "a"}},
		"the tightest racks are used, the roomy ones kept": {plan: four, free: map[string]int{"a": 18, "b": 16, "c": 16, "d": 16, "e": 16, "f": 2},
			want: map[int]string{0: "b", 1: "c", 2: "d", 3: "e"}},
		"only three racks with 16 free: no slice is placed": {plan: four, free: map[string]int{"a": 18, "b": 16, "c": 15, "d": 16},
			short: &Shortfall{Need: 4, Size: 16, Found: 3}},
		"two slices never share a clique, however roomy": {plan: four, free: map[string]int{"a": 1000},
			short: &Shortfall{Need: 4, Size: 16, Found: 1}},
		"uneven slices: the larger one takes the clique only it fits": {plan: func() Plan { p, _ := New(19, 18, 0); return p }(),
			free: map[string]int{"a": 9, "b": 10}, want: map[int]string{0: "b", 1: "a"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Assign(tc.plan, tc.free)
			if tc.short != nil {
				var short *Shortfall
				if !errors.As(err, &short) || *short != *tc.short || got != nil {
					t.Fatalf("Assign = %v, %v; want nothing and %v", got, err, tc.short)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("assignment (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShortfallNamesTheNumbers(t *testing.T) {
	err := error(&Shortfall{Need: 4, Size: 16, Found: 3})
	if got := err.Error(); got != "need 4 cliques with 16 free nodes each, found 3" {
		t.Errorf("%q", got)
	}
}

func TestRankOfReadsTheWorkloadsIndex(t *testing.T) {
	cases := map[string]struct {
		labels, annotations map[string]string
		rank                int
		ok                  bool
		err                 string
	}{
		"an Indexed Job's label":                                    {labels: map[string]string{JobCompletionIndex: "17"}, rank: 17, ok: true},
		"an Indexed Job's annotation":                               {annotations: map[string]string{JobCompletionIndex: "3"}, rank: 3, ok: true},
		"a LeaderWorkerSet's worker":                                {labels: map[string]string{LWSWorkerIndex: "5"}, rank: 5, ok: true},
		"a pod of no indexed workload":                              {labels: map[string]string{"app": "x"}},
		"a value that is no index":                                  {labels: map[string]string{JobCompletionIndex: "x"}, err: JobCompletionIndex + ` "x": want a non-negative integer`},
		"a negative value is no index":                              {annotations: map[string]string{LWSWorkerIndex: "-2"}, err: LWSWorkerIndex + ` "-2"`},
		"the label wins over annotations":                           {labels: map[string]string{JobCompletionIndex: "1"}, annotations: map[string]string{JobCompletionIndex: "9"}, rank: 1, ok: true},
		"a JobSet pod of a one-pod child Job: its global Job index": {labels: map[string]string{JobSetGlobalIndex: "12", JobCompletionIndex: "0"}, rank: 12, ok: true},
		"a JobSet pod of a child Job with several pods: no rank":    {labels: map[string]string{JobSetGlobalIndex: "12", JobCompletionIndex: "1"}},
		"a JobSet index that is no index":                           {labels: map[string]string{JobSetGlobalIndex: "a"}, err: JobSetGlobalIndex + ` "a"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rank, ok, err := RankOf(tc.labels, tc.annotations)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || rank != tc.rank || ok != tc.ok {
				t.Errorf("RankOf = %d, %v, %v; want %d, %v", rank, ok, err, tc.rank, tc.ok)
			}
		})
	}
}

func TestSummaryNamesTheSlices(t *testing.T) {
	for want, p := range map[string]Plan{
		"4 × 16":   func() Plan { p, _ := New(64, 18, 0); return p }(),
		"14+13+13": func() Plan { p, _ := New(40, 18, 0); return p }(),
		"1 × 7":    func() Plan { p, _ := New(7, 18, 0); return p }(),
	} {
		if got := p.Summary(); got != want {
			t.Errorf("Summary = %q, want %q", got, want)
		}
	}
}
