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
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

func TestEdits(t *testing.T) {
	type mount struct{ host, container string }
	cases := map[string]struct {
		files Files
		want  []mount
	}{
		"no driver files give no mounts": {},
		"a driver container's root: host paths under it, container paths without it": {
			files: Files{
				HostPath: "/run/nvidia/driver",
				Libraries: []Library{
					{Path: "usr/lib64/libcuda.so.580.95.05", Links: []string{"libcuda.so.1", "libcuda.so"}},
					{Path: "usr/lib64/libnvidia-gpucomp.so.580.95.05"},
				},
				Binaries: []string{"usr/bin/nvidia-smi"},
				Firmware: "lib/firmware/nvidia/580.95.05",
			},
			want: []mount{
				{"/run/nvidia/driver/usr/lib64/libcuda.so.580.95.05", "/usr/lib64/libcuda.so.580.95.05"},
				{"/run/nvidia/driver/usr/lib64/libcuda.so.580.95.05", "/usr/lib64/libcuda.so.1"},
				{"/run/nvidia/driver/usr/lib64/libcuda.so.580.95.05", "/usr/lib64/libcuda.so"},
				{"/run/nvidia/driver/usr/lib64/libnvidia-gpucomp.so.580.95.05", "/usr/lib64/libnvidia-gpucomp.so.580.95.05"},
				{"/run/nvidia/driver/usr/lib64/libcuda.so.580.95.05", "/usr/local/nvidia/lib64/libcuda.so.1"},
				{"/run/nvidia/driver/usr/lib64/libcuda.so.580.95.05", "/usr/local/nvidia/lib64/libcuda.so"},
				{"/run/nvidia/driver/usr/bin/nvidia-smi", "/usr/bin/nvidia-smi"},
				{"/run/nvidia/driver/lib/firmware/nvidia/580.95.05", "/lib/firmware/nvidia/580.95.05"},
			},
		},
		"a driver on the host mounts the same paths": {
			files: Files{HostPath: "/", Binaries: []string{"usr/bin/nvidia-smi"}},
			want:  []mount{{"/usr/bin/nvidia-smi", "/usr/bin/nvidia-smi"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			edits := tc.files.Edits()
			var got []mount
			for _, m := range edits.Mounts {
				got = append(got, mount{m.HostPath, m.ContainerPath})
				if diff := cmp.Diff([]string{"ro", "nosuid", "nodev", "rbind", "rprivate"}, m.Options); diff != "" || m.Type != "bind" {
					t.Errorf("mount %s: type %q, options (-want +got):\n%s", m.ContainerPath, m.Type, diff)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(mount{})); diff != "" {
				t.Errorf("mounts (-want +got):\n%s", diff)
			}
			if len(edits.Env) != 0 || len(edits.DeviceNodes) != 0 || len(edits.Hooks) != 0 {
				t.Errorf("edits beyond mounts: %+v", cdispec.ContainerEdits{Env: edits.Env, DeviceNodes: edits.DeviceNodes, Hooks: edits.Hooks})
			}
		})
	}
}
