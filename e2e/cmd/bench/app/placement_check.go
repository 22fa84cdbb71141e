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
	"github.com/computedomain-operator/computedomain-operator/internal/sliceplan"
)

// boundPod is where one pod of a job was bound: its rank (completion index) and its node's clique.
type boundPod struct {
	rank   int
	clique string
}

// placementCheck is what a job's placement looks like against its slice plan: the pods per clique, and how many
// of the plan's blocks of consecutive ranks lie whole in one clique.
type placementCheck struct {
	placed      map[string]int
	wholeBlocks int
	blocks      int
	// missing counts the plan's ranks without a bound pod.
	missing int
}

// contiguous is every block of consecutive ranks in one clique.
func (c placementCheck) contiguous() bool { return c.missing == 0 && c.wholeBlocks == c.blocks }

// checkPlacement reads pods against plan: each slice of the plan is a block of consecutive ranks, whole when
// all its pods are bound in one clique.
func checkPlacement(plan sliceplan.Plan, pods []boundPod) placementCheck {
	c := placementCheck{placed: map[string]int{}, blocks: len(plan.Slices)}
	cliquesOf := make([]map[string]bool, len(plan.Slices))
	bound := make([]int, len(plan.Slices))
	for _, p := range pods {
		c.placed[p.clique]++
		s, ok := plan.SliceOf(p.rank)
		if !ok {
			continue
		}
		if cliquesOf[s.Index] == nil {
			cliquesOf[s.Index] = map[string]bool{}
		}
		cliquesOf[s.Index][p.clique] = true
		bound[s.Index]++
	}
	for i, s := range plan.Slices {
		c.missing += max(0, s.Size-bound[i])
		if bound[i] == s.Size && len(cliquesOf[i]) == 1 {
			c.wholeBlocks++
		}
	}
	return c
}
