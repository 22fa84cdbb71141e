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

package gpu

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
)

func TestReadHostDevices(t *testing.T) {
	cases := map[string]struct {
		files map[string]string
		want  hostDevices
	}{
		"a node with UVM and MIG": {
			files: map[string]string{
				"proc/devices":                       "Character devices:\n195 nvidia-frontend\n236 nvidia-caps\n510 nvidia-uvm\n\nBlock devices:\n236 not-a-char-device\n",
				"proc/driver/nvidia-caps/mig-minors": "config 1\nmonitor 2\ngpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n",
			},
			want: hostDevices{uvmMajor: 510, capsMajor: 236, migMinors: map[string]int{"config": 1, "monitor": 2, "gpu0/gi1/access": 12, "gpu0/gi1/ci0/access": 13}},
		},
		"a node without MIG support has no caps": {
			files: map[string]string{"proc/devices": "Character devices:\n195 nvidia-frontend\n510 nvidia-uvm\n"},
			want:  hostDevices{uvmMajor: 510, migMinors: map[string]int{}},
		},
		"an empty host root gives nothing, not an error": {
			want: hostDevices{migMinors: map[string]int{}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			for p, content := range tc.files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := readHostDevices(hostroot.New(root))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(hostDevices{})); diff != "" {
				t.Errorf("host devices (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadHostDevicesFromTheSharedFake(t *testing.T) {
	// The fake host root the simulated cluster uses must give the plugin
	// what a MIG device needs.
	root, err := hostroot.Fake(t.TempDir(), hostroot.FakeSpec{NodeName: "n", GPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	got, err := readHostDevices(root)
	if err != nil {
		t.Fatal(err)
	}
	if got.uvmMajor == 0 || got.capsMajor == 0 {
		t.Errorf("majors uvm=%d caps=%d, want both", got.uvmMajor, got.capsMajor)
	}
	for _, key := range []string{giCapKey(1, 3), ciCapKey(1, 3, 0)} {
		if _, ok := got.migMinors[key]; !ok {
			t.Errorf("no MIG minor for %s", key)
		}
	}
}
