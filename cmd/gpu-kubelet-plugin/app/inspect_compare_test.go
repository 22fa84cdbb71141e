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
	"bytes"
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"
	"sigs.k8s.io/yaml"
)

func TestInspectCompareProfile(t *testing.T) {
	cases := map[string]struct {
		profile, compare string
		// want are substrings of the differences; nil: none at all.
		want []string
	}{
		"a node matches its own profile": {
			profile: "hgx-h100-8", compare: "hgx-h100-8",
		},
		"another product shows name and memory": {
			profile: "hgx-h100-8", compare: "hgx-h200-8",
			want: []string{`gpu-0: attribute productName: node "NVIDIA H100 80GB HBM3", profile "NVIDIA H200"`, "gpu-7: capacity memory"},
		},
		"a MIG node against a full-GPU profile lists devices on one side": {
			profile: "a100-40gb-mig", compare: "hgx-h100-8",
			want: []string{"gpu-0: published by the profile, not by this node", "published by this node, not by the profile"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			dirs := newNodeDirs(t, tc.profile, "node-c")
			var out bytes.Buffer
			args := append([]string{"inspect"}, dirs.args("node-c", tc.profile, "--compare-profile="+tc.compare)...)
			if err := run(ctx, args, noEnv, &out, nil); err != nil {
				t.Fatal(err)
			}
			var report InspectReport
			if err := yaml.Unmarshal(out.Bytes(), &report); err != nil {
				t.Fatal(err)
			}
			if report.Comparison == nil || report.Comparison.Profile != tc.compare {
				t.Fatalf("comparison %+v", report.Comparison)
			}
			diffs := strings.Join(report.Comparison.Differences, "\n")
			if tc.want == nil && diffs != "" {
				t.Errorf("unexpected differences:\n%s", diffs)
			}
			for _, w := range tc.want {
				if !strings.Contains(diffs, w) {
					t.Errorf("differences lack %q:\n%s", w, diffs)
				}
			}
		})
	}
}

func TestCompareProfileOnlyForInspect(t *testing.T) {
	if _, err := parse([]string{"--node-name=n", "--compare-profile=hgx-h100-8"}, noEnv); err == nil {
		t.Error("--compare-profile accepted outside inspect")
	}
}
