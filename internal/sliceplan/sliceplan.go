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

// Package sliceplan plans how a ComputeDomain larger than one NVLink clique is placed: as k slices of
// consecutive ranks, each slice's pods in one clique, all slices or none. Multi-node NVLink reaches only inside
// a rack (a clique), and NCCL's rings and trees want consecutive ranks together, so a slice is a contiguous rank
// range: the lowest ranks in the first slice.
//
// The package is pure: the placement paths (the Workload API's composite pod groups, the controller's clique
// placement fallback, the pod webhook) and the domain's status share it, so that they agree on which rank
// belongs to which slice.
package sliceplan

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// Slice is one slice of a plan: the ranks [First, First+Size).
type Slice struct {
	// Index is the slice's position, 0 for the lowest ranks.
	Index int
	First int
	Size  int
}

// Last is the slice's highest rank.
func (s Slice) Last() int { return s.First + s.Size - 1 }

// Contains reports whether rank is one of the slice's.
func (s Slice) Contains(rank int) bool { return rank >= s.First && rank < s.First+s.Size }

func (s Slice) String() string {
	return fmt.Sprintf("slice %d (ranks %d-%d)", s.Index, s.First, s.Last())
}

// Plan is a domain's slices, in rank order.
type Plan struct {
	Slices []Slice
}

// Summary is the plan for messages: "4 × 16" for equal slices, "14+13+13" otherwise.
func (p Plan) Summary() string {
	if len(p.Slices) == 0 {
		return "no slices"
	}
	sizes := make([]string, len(p.Slices))
	equal := true
	for i, s := range p.Slices {
		sizes[i] = strconv.Itoa(s.Size)
		equal = equal && s.Size == p.Slices[0].Size
	}
	if equal {
		return fmt.Sprintf("%d × %d", len(p.Slices), p.Slices[0].Size)
	}
	return strings.Join(sizes, "+")
}

// Nodes is the number of ranks the plan covers.
func (p Plan) Nodes() int {
	n := 0
	for _, s := range p.Slices {
		n += s.Size
	}
	return n
}

// SliceOf is the slice of rank; false when the plan has no such rank.
func (p Plan) SliceOf(rank int) (Slice, bool) {
	i, found := slices.BinarySearchFunc(p.Slices, rank, func(s Slice, r int) int {
		switch {
		case r < s.First:
			return 1
		case r > s.Last():
			return -1
		}
		return 0
	})
	if !found {
		return Slice{}, false
	}
	return p.Slices[i], true
}

// New plans nodes ranks over cliques of at most perClique pods each. sliceSize 0 takes the default: the
// fewest slices that fit a clique, of equal sizes (the first slices one larger when nodes does not divide
// evenly: 40 over cliques of 18 is 14, 13, 13); a domain that fits one clique is one slice. A sliceSize the
// user chose must divide nodes and fit a clique. Errors name the field and what is allowed.
func New(nodes, perClique, sliceSize int) (Plan, error) {
	switch {
	case nodes <= 0:
		return Plan{}, fmt.Errorf("spec.numNodes %d: a slice plan needs at least one node", nodes)
	case perClique <= 0:
		return Plan{}, fmt.Errorf("clique size %d: want at least 1", perClique)
	case sliceSize < 0:
		return Plan{}, fmt.Errorf("spec.sliceSize %d: want 0 (the default plan) or a positive size", sliceSize)
	case sliceSize > perClique:
		return Plan{}, fmt.Errorf("spec.sliceSize %d: larger than a clique's IMEX ensemble (%d nodes), so no clique could ever hold a slice; allowed: a divisor of spec.numNodes %d of at most %d, or 0 for the default plan", sliceSize, perClique, nodes, perClique)
	case sliceSize > 0 && nodes%sliceSize != 0:
		return Plan{}, fmt.Errorf("spec.sliceSize %d: does not divide spec.numNodes %d; allowed: a divisor of %d of at most %d, or 0 for the default plan", sliceSize, nodes, nodes, perClique)
	}
	k := (nodes + perClique - 1) / perClique
	if sliceSize > 0 {
		k = nodes / sliceSize
	}
	base, extra := nodes/k, nodes%k
	p := Plan{Slices: make([]Slice, k)}
	first := 0
	for i := range k {
		size := base
		if i < extra {
			size++
		}
		p.Slices[i] = Slice{Index: i, First: first, Size: size}
		first += size
	}
	return p, nil
}

// ForDomain is the plan of a ComputeDomain: spec.numNodes over cliques of at most perClique nodes (the most one
// IMEX ensemble takes), in slices of spec.sliceSize or, when 0, the default plan.
func ForDomain(cd *v1beta1.ComputeDomain, perClique int) (Plan, error) {
	return New(int(cd.Spec.NumNodes), perClique, int(cd.Spec.SliceSize))
}

// Shortfall is a plan that does not fit the free capacity: Need cliques with at least Size free nodes each
// (the largest slice's size), Found of them.
type Shortfall struct {
	Need, Size, Found int
}

func (s *Shortfall) Error() string {
	return fmt.Sprintf("need %d cliques with %d free nodes each, found %d", s.Need, s.Size, s.Found)
}

// Assign puts each slice of the plan in its own clique with room for it, given each clique's free nodes:
// the largest slices first, each into the clique with the least room that holds it (ties by name), so that
// the roomiest cliques stay for what comes next. All or nothing: when some slice finds no clique, the
// result is nil and a *Shortfall says what was missing.
func Assign(p Plan, free map[string]int) (map[int]string, error) {
	order := slices.Clone(p.Slices)
	slices.SortStableFunc(order, func(a, b Slice) int { return cmp.Compare(b.Size, a.Size) })
	cliques := make([]string, 0, len(free))
	for c := range free {
		cliques = append(cliques, c)
	}
	slices.SortFunc(cliques, func(a, b string) int { return cmp.Or(cmp.Compare(free[a], free[b]), cmp.Compare(a, b)) })
	used := map[string]bool{}
	out := map[int]string{}
	for _, s := range order {
		i := slices.IndexFunc(cliques, func(c string) bool { return !used[c] && free[c] >= s.Size })
		if i < 0 {
			largest := order[0].Size
			found := 0
			for _, c := range cliques {
				if free[c] >= largest {
					found++
				}
			}
			return nil, &Shortfall{Need: len(p.Slices), Size: largest, Found: found}
		}
		used[cliques[i]] = true
		out[s.Index] = cliques[i]
	}
	return out, nil
}

// Rank labels of the workloads whose pods carry their rank.
const (
	// JobCompletionIndex is an Indexed Job's pod index (label and annotation).
	JobCompletionIndex = "batch.kubernetes.io/job-completion-index"
	// JobSetGlobalIndex is a JobSet child Job's index across all of the JobSet's replicated jobs.
	JobSetGlobalIndex = "jobset.sigs.k8s.io/job-global-index"
	// LWSWorkerIndex is a LeaderWorkerSet pod's index in its group (the leader is 0).
	LWSWorkerIndex = "leaderworkerset.sigs.k8s.io/worker-index"
)

// RankOf reads a pod's rank from its labels or annotations; false when the pod carries none. A JobSet pod's
// rank is its child Job's global index when that Job runs one pod (completion index 0); a JobSet whose child
// Jobs run several pods each has no rank the pod alone tells (the pods-per-Job count is not on the pod). Then an
// Indexed Job's completion index, then a LeaderWorkerSet's worker index. A value that is no non-negative
// number is an error naming the key.
func RankOf(labels, annotations map[string]string) (int, bool, error) {
	read := func(key string) (int, bool, error) {
		v, ok := labels[key]
		if !ok {
			v, ok = annotations[key]
		}
		if !ok {
			return 0, false, nil
		}
		rank, err := strconv.Atoi(v)
		if err != nil || rank < 0 {
			return 0, false, fmt.Errorf("%s %q: want a non-negative integer", key, v)
		}
		return rank, true, nil
	}
	job, jobOK, err := read(JobCompletionIndex)
	if err != nil {
		return 0, false, err
	}
	global, globalOK, err := read(JobSetGlobalIndex)
	if err != nil {
		return 0, false, err
	}
	if globalOK {
		if jobOK && job > 0 {
			return 0, false, nil
		}
		return global, true, nil
	}
	if jobOK {
		return job, true, nil
	}
	return read(LWSWorkerIndex)
}
