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

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFindBinaries(t *testing.T) {
	cases := map[string]struct {
		files []string
		want  []string
	}{
		"the tools present, in their directories": {
			files: []string{"usr/bin/nvidia-smi", "usr/bin/nvidia-cuda-mps-control", "sbin/nvidia-persistenced", "usr/bin/nvidia-settings"},
			want:  []string{"usr/bin/nvidia-smi", "sbin/nvidia-persistenced", "usr/bin/nvidia-cuda-mps-control"},
		},
		"the first directory that has a tool wins": {
			files: []string{"bin/nvidia-smi", "usr/bin/nvidia-smi"},
			want:  []string{"usr/bin/nvidia-smi"},
		},
		"no tools is none": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, tc.files...)
			if diff := cmp.Diff(tc.want, findBinaries(root)); diff != "" {
				t.Errorf("binaries (-want +got):\n%s", diff)
			}
		})
	}
}
