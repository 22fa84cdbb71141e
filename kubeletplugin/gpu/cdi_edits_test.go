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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/computedomain-operator/computedomain-operator/internal/driverroot"
)

func TestDeviceEdits(t *testing.T) {
	withCaps := hostDevices{uvmMajor: 510, capsMajor: 236, migMinors: map[string]int{"gpu1/gi3/access": 30, "gpu1/gi3/ci0/access": 31}}
	mig := preparedDevice{Name: "gpu-1-mig-1g5gb-19-2", ParentMinor: 1, Data: deviceData{Type: deviceTypeMig, UUID: "MIG-x", GIID: 3, CIID: 0}}
	cases := map[string]struct {
		hd        hostDevices
		dev       preparedDevice
		wantNodes []string
		wantEnv   []string
		wantErr   string
	}{
		"a full GPU gets its node and UUID": {
			hd:        withCaps,
			dev:       preparedDevice{Name: "gpu-3", ParentMinor: 3, Data: deviceData{Type: deviceTypeGpu, UUID: "GPU-3"}, SharingEnv: []string{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=20"}},
			wantNodes: []string{"/dev/nvidia3"},
			wantEnv:   []string{"NVIDIA_DRA_DEVICE_GPU_3=GPU-3", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=20"},
		},
		"a MIG device adds its GI and CI capabilities": {
			hd:        withCaps,
			dev:       mig,
			wantNodes: []string{"/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap30", "/dev/nvidia-caps/nvidia-cap31"},
			wantEnv:   []string{"NVIDIA_DRA_DEVICE_GPU_1_MIG_1G5GB_19_2=MIG-x"},
		},
		"a MIG device on a node without nvidia-caps fails with the reason": {
			hd: hostDevices{migMinors: map[string]int{}}, dev: mig, wantErr: "nvidia-caps device, not found in /proc/devices",
		},
		"a MIG device whose capability minor is unknown fails naming it": {
			hd: hostDevices{capsMajor: 236, migMinors: map[string]int{}}, dev: mig, wantErr: "gpu1/gi3/access not in",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := deviceEdits(tc.hd, tc.dev)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var nodes []string
			for _, n := range got.Edits.DeviceNodes {
				nodes = append(nodes, n.Path)
			}
			if diff := cmp.Diff(tc.wantNodes, nodes); diff != "" {
				t.Errorf("device nodes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEnv, got.Edits.Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCommonEdits(t *testing.T) {
	files := driverroot.Files{
		HostPath:  "/run/nvidia/driver",
		Libraries: []driverroot.Library{{Path: "usr/lib64/libnvidia-ml.so.580.95.05", Links: []string{"libnvidia-ml.so.1"}}},
		Binaries:  []string{"usr/bin/nvidia-smi"},
	}
	cases := map[string]struct {
		hd         hostDevices
		files      driverroot.Files
		wantNodes  []string
		wantMounts []string
	}{
		"without UVM and a driver: the control device only": {
			wantNodes: []string{"/dev/nvidiactl"},
		},
		"with UVM and the driver's files: UVM nodes and a mount per file and name": {
			hd:         hostDevices{uvmMajor: 510},
			files:      files,
			wantNodes:  []string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"},
			wantMounts: []string{"/usr/lib64/libnvidia-ml.so.580.95.05", "/usr/lib64/libnvidia-ml.so.1", "/usr/local/nvidia/lib64/libnvidia-ml.so.1", "/usr/bin/nvidia-smi"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := commonEdits(tc.hd, tc.files)
			var nodes, mounts []string
			for _, n := range got.DeviceNodes {
				nodes = append(nodes, n.Path)
			}
			for _, m := range got.Mounts {
				mounts = append(mounts, m.ContainerPath)
			}
			if diff := cmp.Diff(tc.wantNodes, nodes); diff != "" {
				t.Errorf("device nodes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantMounts, mounts); diff != "" {
				t.Errorf("mounts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"NVIDIA_VISIBLE_DEVICES=void"}, got.Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}
