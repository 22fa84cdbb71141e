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

package clustercli

import (
	"fmt"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"
)

// DescribeNodes summarizes node counts per profile, e.g. "36 gb200-nvl72, 2 hgx-h100-8".
func DescribeNodes(nodes []topology.NodeSpec) string {
	counts := map[string]int{}
	var order []string
	for _, n := range nodes {
		if counts[n.Profile.Name] == 0 {
			order = append(order, n.Profile.Name)
		}
		counts[n.Profile.Name]++
	}
	s := ""
	for i, p := range order {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d %s", counts[p], p)
	}
	return s
}
