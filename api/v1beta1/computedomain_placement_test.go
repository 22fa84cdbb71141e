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

package v1beta1

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestSlicePodGroupNamesAreValidAndDistinctForEveryNameLength(t *testing.T) {
	cases := map[string]string{
		"a short name":                      "job",
		"a name that just fits with suffix": strings.Repeat("a", 253-len("-slice-3")),
		"a name one too long":               strings.Repeat("a", 253-len("-slice-3")+1),
		"the longest name":                  strings.Repeat("b", 253),
		"a long name cut at a dot":          strings.Repeat("c", 228) + "." + strings.Repeat("d", 24),
	}
	for name, domain := range cases {
		t.Run(name, func(t *testing.T) {
			cd := &ComputeDomain{}
			cd.Name = domain
			seen := map[string]bool{}
			for i := range 64 {
				got := ComputeDomainSlicePodGroupName(cd, i)
				if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
					t.Fatalf("slice %d: %q is no object name: %v", i, got, errs)
				}
				if seen[got] {
					t.Fatalf("slice %d: %q named twice", i, got)
				}
				seen[got] = true
			}
		})
	}
	long := &ComputeDomain{}
	long.Name = strings.Repeat("e", 253)
	other := &ComputeDomain{}
	other.Name = strings.Repeat("e", 252) + "f"
	if ComputeDomainSlicePodGroupName(long, 0) == ComputeDomainSlicePodGroupName(other, 0) {
		t.Error("two long names that differ only at the end share a slice PodGroup name")
	}
}
