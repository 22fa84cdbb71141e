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
	"testing"
)

func TestBadInputsNameTheFlagAndWhatIsAllowed(t *testing.T) {
	cases := map[string]struct {
		run  func() error
		want string
	}{
		"a --domain that names no domain": {
			run: func() error {
				_, err := BuildRacks(busyCluster(), RacksOptions{Domain: "nope", DomainNamespace: "team-a"})
				return err
			},
			want: "--domain nope: no ComputeDomain nope in namespace team-a",
		},
		"a --clique that no node carries": {
			run: func() error {
				_, err := BuildRacks(busyCluster(), RacksOptions{Clique: "x.9"})
				return err
			},
			want: "--clique x.9: no node carries the label nvidia.com/gpu.clique=x.9; cliques: " + cliqueA + ", " + cliqueB,
		},
		"describe of a domain that does not exist": {
			run: func() error {
				_, err := Describe(busyCluster(), "team-b", "train")
				return err
			},
			want: "DOMAIN train: no ComputeDomain train in namespace team-b (choose the namespace with -n)",
		},
		"an unknown -o": {
			run: func() error {
				_, err := ParseFormat("png", RacksFormats)
				return err
			},
			want: `-o "png": unknown output format; allowed: text, json, yaml, svg`,
		},
		"-o svg for describe": {
			run: func() error {
				_, err := ParseFormat("svg", DescribeFormats)
				return err
			},
			want: `-o "svg": unknown output format; allowed: text, json, yaml`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.run()
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
