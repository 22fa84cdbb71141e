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

func TestIMEXCliqueName(t *testing.T) {
	long := strings.Repeat("a", 300) + ".1"
	cases := map[string]struct {
		clique string
		want   string
	}{
		"a clique ID that is a valid name stays as it is":                          {clique: "5f1e0c9a-aaaa-bbbb-cccc-000000000001.1", want: "5f1e0c9a-aaaa-bbbb-cccc-000000000001.1"},
		"upper case and other characters are replaced, and a hash keeps it unique": {clique: "ABC_1.2", want: "abc-1.2-"},
		"an ID too long for a name is cut and hashed":                              {clique: long, want: strings.Repeat("a", 236) + "-"},
		"an ID of only disallowed characters still gets a name":                    {clique: "__", want: "clique-"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := IMEXCliqueName(tc.clique)
			if !strings.HasPrefix(got, tc.want) || (strings.HasSuffix(tc.want, "-") && len(got) != len(tc.want)+16) {
				t.Errorf("IMEXCliqueName(%q) = %q, want %q (+ a 16-character hash where it ends in -)", tc.clique, got, tc.want)
			}
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Errorf("IMEXCliqueName(%q) = %q is no valid name: %v", tc.clique, got, errs)
			}
		})
	}
	if IMEXCliqueName("ABC_1.2") == IMEXCliqueName("abc-1.2") {
		t.Error("two clique IDs that differ only in replaced characters share a name")
	}
}
