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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFindLibraries(t *testing.T) {
	const v = "580.95.05"
	cases := map[string]struct {
		files   []string
		want    []Library
		wantErr string
	}{
		"a RHEL layout: the libraries of the version, with their sonames": {
			files: []string{
				"usr/lib64/libcuda.so." + v, "usr/lib64/libnvidia-ml.so." + v, "usr/lib64/libnvidia-nvvm.so." + v,
				"usr/lib64/libnvidia-gpucomp.so." + v, "usr/lib64/libcuda.so.570.86.15", "usr/lib64/libnvidia-egl-wayland.so.1.1.19",
			},
			want: []Library{
				{Path: "usr/lib64/libcuda.so." + v, Links: []string{"libcuda.so.1", "libcuda.so"}},
				{Path: "usr/lib64/libnvidia-ml.so." + v, Links: []string{"libnvidia-ml.so.1"}},
				{Path: "usr/lib64/libnvidia-nvvm.so." + v, Links: []string{"libnvidia-nvvm.so.4"}},
				{Path: "usr/lib64/libnvidia-gpucomp.so." + v},
			},
		},
		"the first library directory that has a library wins": {
			files: []string{"usr/lib/x86_64-linux-gnu/libnvidia-ml.so." + v, "lib/x86_64-linux-gnu/libnvidia-ml.so." + v, "lib/x86_64-linux-gnu/libcuda.so." + v},
			want: []Library{
				{Path: "lib/x86_64-linux-gnu/libcuda.so." + v, Links: []string{"libcuda.so.1", "libcuda.so"}},
				{Path: "usr/lib/x86_64-linux-gnu/libnvidia-ml.so." + v, Links: []string{"libnvidia-ml.so.1"}},
			},
		},
		"a directory named like a library is not one": {
			files:   []string{"usr/lib64/libnvidia-ml.so." + v + "/"},
			wantErr: "libnvidia-ml.so.580.95.05 not found",
		},
		"libcuda without libnvidia-ml is not a driver": {
			files:   []string{"usr/lib64/libcuda.so." + v},
			wantErr: "libnvidia-ml.so.580.95.05 not found",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, tc.files...)
			got, err := findLibraries(root, v)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("libraries (-want +got):\n%s", diff)
			}
		})
	}
}
