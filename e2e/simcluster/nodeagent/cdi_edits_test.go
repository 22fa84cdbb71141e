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

package nodeagent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/driverroot"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
)

const testSpec = `{
  "cdiVersion": "0.6.0",
  "kind": "k8s.gpu.nvidia.com/claim",
  "devices": [
    {"name": "uid1-gpu-0", "containerEdits": {
      "env": ["NVIDIA_VISIBLE_DEVICES=GPU-0"],
      "deviceNodes": [{"path": "/dev/nvidia0", "type": "c", "major": 195, "minor": 0}]
    }},
    {"name": "uid1-gpu-1", "containerEdits": {
      "env": ["NVIDIA_VISIBLE_DEVICES_1=GPU-1"],
      "deviceNodes": [{"path": "/dev/nvidia1", "type": "c", "major": 195, "minor": 1}]
    }}
  ],
  "containerEdits": {
    "mounts": [{"hostPath": "/run/nvidia/driver/lib", "containerPath": "/usr/lib/nvidia", "options": ["ro", "bind"]}]
  }
}`

func TestResolveCDI(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k8s.gpu.nvidia.com-claim_uid1.json"), []byte(testSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		ids     []string
		want    ContainerEdits
		wantErr string
	}{
		"no devices leave the container untouched": {
			want: ContainerEdits{CDIDevices: []string{}},
		},
		"one device brings its env, its device node and the spec-wide mount": {
			ids: []string{"k8s.gpu.nvidia.com/claim=uid1-gpu-0"},
			want: ContainerEdits{
				CDIDevices:  []string{"k8s.gpu.nvidia.com/claim=uid1-gpu-0"},
				Env:         []string{"NVIDIA_VISIBLE_DEVICES=GPU-0"},
				DeviceNodes: []DeviceNode{{Path: "/dev/nvidia0", Type: "c", Major: 195, Minor: 0}},
				Mounts:      []Mount{{ContainerPath: "/usr/lib/nvidia", HostPath: "/run/nvidia/driver/lib", Options: []string{"ro", "bind"}}},
			},
		},
		"two devices merge": {
			ids: []string{"k8s.gpu.nvidia.com/claim=uid1-gpu-0", "k8s.gpu.nvidia.com/claim=uid1-gpu-1"},
			want: ContainerEdits{
				CDIDevices: []string{"k8s.gpu.nvidia.com/claim=uid1-gpu-0", "k8s.gpu.nvidia.com/claim=uid1-gpu-1"},
				Env:        []string{"NVIDIA_VISIBLE_DEVICES=GPU-0", "NVIDIA_VISIBLE_DEVICES_1=GPU-1"},
				DeviceNodes: []DeviceNode{
					{Path: "/dev/nvidia0", Type: "c", Major: 195, Minor: 0},
					{Path: "/dev/nvidia1", Type: "c", Major: 195, Minor: 1},
				},
				Mounts: []Mount{{ContainerPath: "/usr/lib/nvidia", HostPath: "/run/nvidia/driver/lib", Options: []string{"ro", "bind"}}},
			},
		},
		"a device no spec defines is an error": {
			ids:     []string{"k8s.gpu.nvidia.com/claim=missing"},
			wantErr: "unresolvable CDI devices",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ResolveCDI(dir, tc.ids)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ResolveCDI() error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ResolveCDI() error = %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ResolveCDI() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// The GPU plugin of a simulated node mounts the fake driver of the node's
// host root; the container view carries those mounts with their real host
// paths and NVIDIA's read-only options.
func TestResolveCDICarriesTheDriversFiles(t *testing.T) {
	root, cdiDir := t.TempDir(), t.TempDir()
	host, err := hostroot.Fake(root, hostroot.FakeSpec{NodeName: "n1", GPUs: 1, DriverVersion: "580.95.05"})
	if err != nil {
		t.Fatal(err)
	}
	files, err := driverroot.Discover(driverroot.Options{HostRoot: host, Root: root, HostPath: root})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cdi.NewWriter(cdiDir, "gpu.nvidia.com")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := w.Write(cdi.ClaimSpec{ClaimUID: "uid1", Common: files.Edits(), Devices: []cdi.Device{{Name: "gpu-0", Edits: cdispec.ContainerEdits{Env: []string{"NVIDIA_DRA_DEVICE_GPU_0=GPU-0"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ResolveCDI(cdiDir, []string{ids["gpu-0"]})
	if err != nil {
		t.Fatal(err)
	}
	opts := []string{"ro", "nosuid", "nodev", "rbind", "rprivate"}
	libcuda := filepath.Join(root, "usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05")
	for _, want := range []Mount{
		{ContainerPath: "/usr/lib/x86_64-linux-gnu/libcuda.so.1", HostPath: libcuda, Options: opts},
		{ContainerPath: "/usr/local/nvidia/lib64/libcuda.so.1", HostPath: libcuda, Options: opts},
		{ContainerPath: "/usr/bin/nvidia-smi", HostPath: filepath.Join(root, "usr/bin/nvidia-smi"), Options: opts},
	} {
		if !slices.ContainsFunc(got.Mounts, func(m Mount) bool { return cmp.Equal(m, want) }) {
			t.Errorf("mounts lack %+v:\n%+v", want, got.Mounts)
		}
	}
}
