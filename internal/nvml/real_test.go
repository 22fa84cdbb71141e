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

package nvml

import (
	"errors"
	"path/filepath"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	gonvmlmock "github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/google/go-cmp/cmp"
)

func TestRealInitFailsCleanlyWithoutDriver(t *testing.T) {
	lib := NewReal(RealOptions{LibraryPath: filepath.Join(t.TempDir(), "libnvidia-ml.so.1")})
	if r := lib.Init(); r != ERROR_LIBRARY_NOT_FOUND {
		t.Fatalf("Init() = %v, want ERROR_LIBRARY_NOT_FOUND", r)
	}
}

func TestRealSetTimeSliceRunsNvidiaSMI(t *testing.T) {
	cases := map[string]struct {
		slice    TimeSlice
		runErr   error
		wantArgs []string
		want     Return
	}{
		"a long slice is passed as 3": {
			slice:    TimeSliceLong,
			wantArgs: []string{"/usr/bin/nvidia-smi", "compute-policy", "-i", "GPU-a", "--set-timeslice=3"},
			want:     SUCCESS,
		},
		"an out-of-range slice is refused before running anything": {
			slice: TimeSlice(7),
			want:  ERROR_INVALID_ARGUMENT,
		},
		"a failing nvidia-smi is reported": {
			slice:    TimeSliceShort,
			runErr:   errors.New("exit status 1"),
			wantArgs: []string{"/usr/bin/nvidia-smi", "compute-policy", "-i", "GPU-a", "--set-timeslice=1"},
			want:     ERROR_UNKNOWN,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var gotArgs []string
			lib := &realLib{opts: RealOptions{
				NvidiaSMIPath: "/usr/bin/nvidia-smi",
				RunCommand: func(name string, args ...string) ([]byte, error) {
					gotArgs = append([]string{name}, args...)
					return nil, tc.runErr
				},
			}}
			d := &realDevice{dev: &gonvmlmock.Device{
				GetUUIDFunc: func() (string, gonvml.Return) { return "GPU-a", gonvml.SUCCESS },
			}, lib: lib}
			if got := d.SetTimeSlice(tc.slice); got != tc.want {
				t.Errorf("SetTimeSlice() = %v, want %v", got, tc.want)
			}
			if diff := cmp.Diff(tc.wantArgs, gotArgs); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
		})
	}
}
