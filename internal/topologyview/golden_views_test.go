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
	"bytes"
	"testing"
)

func TestRacksGolden(t *testing.T) {
	cases := map[string]struct {
		snap   *Snapshot
		opts   RacksOptions
		format Format
	}{
		"racks-busy":               {snap: busyCluster(), format: FormatText},
		"racks-busy.json":          {snap: busyCluster(), format: FormatJSON},
		"racks-busy-domain-filter": {snap: busyCluster(), opts: RacksOptions{Domain: "infer", DomainNamespace: "team-b"}, format: FormatText},
		"racks-busy-namespace-a":   {snap: busyCluster(), opts: RacksOptions{Namespace: "team-a"}, format: FormatText},
		"racks-busy-clique-b.yaml": {snap: busyCluster(), opts: RacksOptions{Clique: cliqueB}, format: FormatYAML},
		"racks-multiclique":        {snap: multiCliqueCluster(), format: FormatText},
		"racks-unhealthy":          {snap: unhealthyCluster(), format: FormatText},
		"racks-blocked":            {snap: blockedCluster(), format: FormatText},
		"racks-busy.svg":           {snap: busyCluster(), format: FormatSVG},
		"racks-unhealthy.svg":      {snap: unhealthyCluster(), format: FormatSVG},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := BuildRacks(tc.snap, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := WriteRacks(&out, r, tc.format); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, name, out.Bytes())
		})
	}
}

func TestDescribeGolden(t *testing.T) {
	cases := map[string]struct {
		snap            *Snapshot
		namespace, name string
		format          Format
	}{
		"describe-busy-train":       {snap: busyCluster(), namespace: "team-a", name: "train", format: FormatText},
		"describe-multiclique":      {snap: multiCliqueCluster(), namespace: "big", name: "llm", format: FormatText},
		"describe-multiclique.json": {snap: multiCliqueCluster(), namespace: "big", name: "llm", format: FormatJSON},
		"describe-unhealthy":        {snap: unhealthyCluster(), namespace: "team-a", name: "train2", format: FormatText},
		"describe-blocked":          {snap: blockedCluster(), namespace: "team-c", name: "waiting", format: FormatText},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := Describe(tc.snap, tc.namespace, tc.name)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := WriteDescription(&out, d, tc.format); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, name, out.Bytes())
		})
	}
}
