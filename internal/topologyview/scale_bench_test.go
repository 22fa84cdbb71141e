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

package topologyview

import (
	"fmt"
	"io"
	"testing"
)

// largeCluster is nodes trays in racks of 18, three quarters of them held by 4-tray domains of one pod per tray.
func largeCluster(nodes int) *Snapshot {
	c := &cluster{}
	for i := range nodes {
		c.tray(fmt.Sprintf("rack%d-%d", i/18, i%18+1), fmt.Sprintf("c0ffee00-0000-4000-8000-000000000001.%d", i/18))
	}
	for d := 0; (d+1)*4 <= nodes*3/4; d++ {
		var trays []string
		for i := range 4 {
			n := d*4 + i
			trays = append(trays, fmt.Sprintf("rack%d-%d", n/18, n%18+1))
		}
		name := fmt.Sprintf("job-%d", d)
		c.domain(readyDomain("team", name, fmt.Sprintf("c0ffee00-0000-4000-8000-000000000001.%d", d*4/18), 0, trays...).Obj())
		for i, tray := range trays {
			c.workloadPod("team", fmt.Sprintf("%s-%d", name, i), name+"-channel", tray, 4)
		}
	}
	return &c.s
}

// BenchmarkRacks1024Nodes builds and prints the racks view of a 1,024-tray cluster (the plugin's work after
// listing), as text and as SVG.
func BenchmarkRacks1024Nodes(b *testing.B) {
	s := largeCluster(1024)
	for _, f := range []Format{FormatText, FormatSVG} {
		b.Run(string(f), func(b *testing.B) {
			for b.Loop() {
				r, err := BuildRacks(s, RacksOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if err := WriteRacks(io.Discard, r, f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDescribe1024Nodes describes one domain of a 1,024-tray cluster.
func BenchmarkDescribe1024Nodes(b *testing.B) {
	s := largeCluster(1024)
	for b.Loop() {
		if _, err := Describe(s, "team", "job-7"); err != nil {
			b.Fatal(err)
		}
	}
}
