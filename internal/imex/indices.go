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

package imex

import "sort"

// AssignIndices gives each node of one clique's IMEX ensemble an index (its IMEX node ID, its line in the
// nodes file) that stays stable while the node stays: a node
// keeps the index it had before (previous), and nodes without one take the lowest free index, in name
// order. With limit > 0 at most limit nodes get an index (0..limit-1); the rest are returned as overflow,
// sorted, and join when an index frees up. A previous index outside the range, or one that two nodes
// claim, is ignored (the first node by name keeps it).
func AssignIndices(nodes []string, previous map[string]int32, limit int) (map[string]int32, []string) {
	sorted := append([]string(nil), nodes...)
	sort.Strings(sorted)

	assigned := make(map[string]int32, len(sorted))
	taken := map[int32]bool{}
	for _, n := range sorted {
		idx, ok := previous[n]
		if !ok || idx < 0 || (limit > 0 && int(idx) >= limit) || taken[idx] {
			continue
		}
		assigned[n] = idx
		taken[idx] = true
	}

	var overflow []string
	next := int32(0)
	for _, n := range sorted {
		if _, ok := assigned[n]; ok {
			continue
		}
		for taken[next] {
			next++
		}
		if limit > 0 && int(next) >= limit {
			overflow = append(overflow, n)
			continue
		}
		assigned[n] = next
		taken[next] = true
	}
	return assigned, overflow
}
