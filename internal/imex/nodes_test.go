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

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadNodesFile(t *testing.T) {
	cases := map[string]struct {
		content *string
		want    []string
	}{
		"a missing file is no peers": {},
		"comments, blanks and duplicates are skipped, order kept": {
			content: new("# peers\n127.0.1.2\n\n127.0.1.1\n127.0.1.2\n  127.0.1.3  \n"),
			want:    []string{"127.0.1.2", "127.0.1.1", "127.0.1.3"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "nodes.cfg")
			if tc.content != nil {
				if err := os.WriteFile(path, []byte(*tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ReadNodesFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("peers (-want +got):\n%s", diff)
			}
		})
	}
}
