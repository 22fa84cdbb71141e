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

package driverroot

import "testing"

func TestFindFirmware(t *testing.T) {
	cases := map[string]struct {
		files []string
		want  string
	}{
		"the version's firmware directory":           {files: []string{"lib/firmware/nvidia/580.95.05/gsp_tu10x.bin"}, want: "lib/firmware/nvidia/580.95.05"},
		"another version's is not mounted":           {files: []string{"lib/firmware/nvidia/570.86.15/gsp_tu10x.bin"}},
		"a file in the directory's place is not one": {files: []string{"lib/firmware/nvidia/580.95.05"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, tc.files...)
			if got := findFirmware(root, "580.95.05"); got != tc.want {
				t.Errorf("firmware = %q, want %q", got, tc.want)
			}
		})
	}
}
