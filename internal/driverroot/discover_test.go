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
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
)

func TestDiscoverAFakeHostRootsDriver(t *testing.T) {
	dir := t.TempDir()
	host, err := hostroot.Fake(dir, hostroot.FakeSpec{NodeName: "n", GPUs: 2, DriverVersion: "580.95.05"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Discover(Options{HostRoot: host, Root: dir, HostPath: "/"})
	if err != nil {
		t.Fatal(err)
	}
	lib := func(name string, links ...string) Library {
		return Library{Path: "usr/lib/x86_64-linux-gnu/" + name + ".580.95.05", Links: links}
	}
	want := Files{
		Version:  "580.95.05",
		HostPath: "/",
		Libraries: []Library{
			lib("libcuda.so", "libcuda.so.1", "libcuda.so"),
			lib("libnvidia-ml.so", "libnvidia-ml.so.1"),
			lib("libnvidia-ptxjitcompiler.so", "libnvidia-ptxjitcompiler.so.1"),
			lib("libnvidia-nvvm.so", "libnvidia-nvvm.so.4"),
			lib("libcudadebugger.so", "libcudadebugger.so.1"),
			lib("libnvidia-gpucomp.so"),
			lib("libnvidia-allocator.so", "libnvidia-allocator.so.1"),
			lib("libnvidia-cfg.so", "libnvidia-cfg.so.1"),
		},
		Binaries: []string{"usr/bin/nvidia-smi", "usr/bin/nvidia-debugdump", "usr/bin/nvidia-cuda-mps-control", "usr/bin/nvidia-cuda-mps-server"},
		Firmware: "lib/firmware/nvidia/580.95.05",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}

func TestDiscoverFailures(t *testing.T) {
	cases := map[string]struct {
		root, hostPath string
		wantErr        string
		wantNoDriver   bool
	}{
		"a relative driver root":     {root: "driver", hostPath: "/", wantErr: "must be absolute paths"},
		"a relative host path":       {root: "/", hostPath: "run/nvidia/driver", wantErr: "must be absolute paths"},
		"an empty driver root":       {root: t.TempDir(), hostPath: "/", wantErr: "no NVIDIA driver found", wantNoDriver: true},
		"a driver root that is gone": {root: filepath.Join(t.TempDir(), "gone"), hostPath: "/", wantErr: "no NVIDIA driver found", wantNoDriver: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Discover(Options{HostRoot: hostroot.New(t.TempDir()), Root: tc.root, HostPath: tc.hostPath})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
			if errors.Is(err, ErrNoDriver) != tc.wantNoDriver {
				t.Errorf("errors.Is(err, ErrNoDriver) = %v, want %v", !tc.wantNoDriver, tc.wantNoDriver)
			}
		})
	}
}
