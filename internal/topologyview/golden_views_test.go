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

// racksIn renders the racks view of s with opts in format f.
func racksIn(s *Snapshot, opts RacksOptions, f Format) func(*bytes.Buffer) error {
	return func(out *bytes.Buffer) error {
		r, err := BuildRacks(s, opts)
		if err != nil {
			return err
		}
		return WriteRacks(out, r, f)
	}
}

// describedIn renders the description of the domain namespace/name of s in format f.
func describedIn(s *Snapshot, namespace, name string, f Format) func(*bytes.Buffer) error {
	return func(out *bytes.Buffer) error {
		d, err := Describe(s, namespace, name)
		if err != nil {
			return err
		}
		return WriteDescription(out, d, f)
	}
}

// The views of the fixed cluster states, each compared with testdata/<name>.golden (-update rewrites them).
func TestViewsGolden(t *testing.T) {
	cases := map[string]func(*bytes.Buffer) error{
		"racks-busy":                racksIn(busyCluster(), RacksOptions{}, FormatText),
		"racks-busy.json":           racksIn(busyCluster(), RacksOptions{}, FormatJSON),
		"racks-busy-domain-filter":  racksIn(busyCluster(), RacksOptions{Domain: "infer", DomainNamespace: "team-b"}, FormatText),
		"racks-busy-namespace-a":    racksIn(busyCluster(), RacksOptions{Namespace: "team-a"}, FormatText),
		"racks-busy-clique-b.yaml":  racksIn(busyCluster(), RacksOptions{Clique: cliqueB}, FormatYAML),
		"racks-multiclique":         racksIn(multiCliqueCluster(), RacksOptions{}, FormatText),
		"racks-unhealthy":           racksIn(unhealthyCluster(), RacksOptions{}, FormatText),
		"racks-blocked":             racksIn(blockedCluster(), RacksOptions{}, FormatText),
		"racks-busy.svg":            racksIn(busyCluster(), RacksOptions{}, FormatSVG),
		"racks-unhealthy.svg":       racksIn(unhealthyCluster(), RacksOptions{}, FormatSVG),
		"describe-busy-train":       describedIn(busyCluster(), "team-a", "train", FormatText),
		"describe-multiclique":      describedIn(multiCliqueCluster(), "big", "llm", FormatText),
		"describe-multiclique.json": describedIn(multiCliqueCluster(), "big", "llm", FormatJSON),
		"describe-unhealthy":        describedIn(unhealthyCluster(), "team-a", "train2", FormatText),
		"describe-blocked":          describedIn(blockedCluster(), "team-c", "waiting", FormatText),
	}
	for name, render := range cases {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := render(&out); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, name, out.Bytes())
		})
	}
}
