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
	"errors"
	"strings"
	"testing"

	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
)

func TestDriverVersion(t *testing.T) {
	cases := map[string]struct {
		kernel    string
		files     []string
		want      string
		wantErr   string
		wantNoDrv bool
	}{
		"the loaded module's version when its libnvidia-ml is there": {
			kernel: "580.95.05",
			files:  []string{"usr/lib64/libnvidia-ml.so.570.86.15", "usr/lib64/libnvidia-ml.so.580.95.05"},
			want:   "580.95.05",
		},
		"without a loaded module, the only libnvidia-ml version": {
			files: []string{"usr/lib/aarch64-linux-gnu/libnvidia-ml.so.580.95.05", "usr/lib/aarch64-linux-gnu/libnvidia-ml.so.1"},
			want:  "580.95.05",
		},
		"the module loaded but another version installed is a mismatch": {
			kernel:  "580.95.05",
			files:   []string{"usr/lib64/libnvidia-ml.so.570.86.15"},
			wantErr: "kernel module 580.95.05 is loaded but libnvidia-ml.so.580.95.05 is not in",
		},
		"several versions and no module cannot be decided": {
			files:   []string{"usr/lib64/libnvidia-ml.so.570.86.15", "lib64/libnvidia-ml.so.580.95.05"},
			wantErr: "several driver versions [570.86.15 580.95.05]",
		},
		"nothing at all is no driver": {
			files:     []string{"usr/lib64/libc.so.6"},
			wantErr:   "no libnvidia-ml.so.<version>",
			wantNoDrv: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			host, root := t.TempDir(), t.TempDir()
			if tc.kernel != "" {
				writeKernelVersion(t, host, tc.kernel)
			}
			writeFiles(t, root, tc.files...)
			got, err := driverVersion(hostroot.New(host), root)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				if errors.Is(err, ErrNoDriver) != tc.wantNoDrv {
					t.Errorf("errors.Is(err, ErrNoDriver) = %v, want %v", !tc.wantNoDrv, tc.wantNoDrv)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("version = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestKernelVersionWithoutAnNVRMLineIsAnError(t *testing.T) {
	host := t.TempDir()
	writeFiles(t, host, "proc/driver/nvidia/version")
	if _, err := kernelVersion(hostroot.New(host)); err == nil || !strings.Contains(err.Error(), "no driver version") {
		t.Errorf("error = %v, want it to say the version is missing", err)
	}
}
