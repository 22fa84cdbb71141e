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

package cdi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

func charDev(path string, major, minor int64) *cdispec.DeviceNode {
	return &cdispec.DeviceNode{Path: path, Type: "c", Major: major, Minor: minor}
}

func gpuClaim(uid string) ClaimSpec {
	return ClaimSpec{
		ClaimUID: uid,
		Common: cdispec.ContainerEdits{
			Env:         []string{"NVIDIA_VISIBLE_DEVICES=void"},
			DeviceNodes: []*cdispec.DeviceNode{charDev("/dev/nvidiactl", 195, 255)},
		},
		Devices: []Device{
			{Name: "gpu-0", Edits: cdispec.ContainerEdits{Env: []string{"GPU_DEVICE_GPU_0=GPU-aaaa"}, DeviceNodes: []*cdispec.DeviceNode{charDev("/dev/nvidia0", 195, 0)}}},
			{Name: "gpu-1", Edits: cdispec.ContainerEdits{Env: []string{"GPU_DEVICE_GPU_1=GPU-bbbb"}, DeviceNodes: []*cdispec.DeviceNode{charDev("/dev/nvidia1", 195, 1)}}},
		},
	}
}

func TestWriteResolvesLikeARuntime(t *testing.T) {
	cases := map[string]struct {
		devices []string
		want    ContainerView
	}{
		"both devices of the claim bring common and own edits": {
			devices: []string{"gpu-0", "gpu-1"},
			want: ContainerView{
				Env:         []string{"GPU_DEVICE_GPU_0=GPU-aaaa", "GPU_DEVICE_GPU_1=GPU-bbbb", "NVIDIA_VISIBLE_DEVICES=void"},
				DeviceNodes: []string{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl"},
			},
		},
		"a container with one device sees only that GPU": {
			devices: []string{"gpu-1"},
			want: ContainerView{
				Env:         []string{"GPU_DEVICE_GPU_1=GPU-bbbb", "NVIDIA_VISIBLE_DEVICES=void"},
				DeviceNodes: []string{"/dev/nvidia1", "/dev/nvidiactl"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			w, err := NewWriter(root, "gpu.nvidia.com")
			if err != nil {
				t.Fatal(err)
			}
			ids, err := w.Write(gpuClaim("uid-1"))
			if err != nil {
				t.Fatal(err)
			}
			wantIDs := map[string]string{
				"gpu-0": "k8s.gpu.nvidia.com/claim=uid-1-gpu-0",
				"gpu-1": "k8s.gpu.nvidia.com/claim=uid-1-gpu-1",
			}
			if diff := cmp.Diff(wantIDs, ids); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
			var inject []string
			for _, d := range tc.devices {
				inject = append(inject, ids[d])
			}
			got, err := Resolve(root, inject...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("container view (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteRejects(t *testing.T) {
	cases := map[string]struct {
		spec    ClaimSpec
		wantErr string
	}{
		"no claim UID":       {spec: ClaimSpec{Devices: []Device{{Name: "gpu-0"}}}, wantErr: "claim UID must not be empty"},
		"no devices":         {spec: ClaimSpec{ClaimUID: "u"}, wantErr: "at least one device"},
		"a duplicate device": {spec: ClaimSpec{ClaimUID: "u", Devices: []Device{{Name: "gpu-0"}, {Name: "gpu-0"}}}, wantErr: `device "gpu-0" listed twice`},
		"an invalid name":    {spec: ClaimSpec{ClaimUID: "u", Devices: []Device{{Name: "gpu/0"}}}, wantErr: `device "gpu/0"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			w, _ := NewWriter(root, "gpu.nvidia.com")
			if _, err := w.Write(tc.spec); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
			entries, _ := os.ReadDir(root)
			if len(entries) != 0 {
				t.Errorf("a rejected spec left files behind: %v", entries)
			}
		})
	}
}

func TestDeleteAndList(t *testing.T) {
	root := t.TempDir()
	w, _ := NewWriter(root, "gpu.nvidia.com")
	other, _ := NewWriter(root, "compute-domain.nvidia.com")
	for _, uid := range []string{"uid-1", "uid-2"} {
		if _, err := w.Write(gpuClaim(uid)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := other.Write(ClaimSpec{ClaimUID: "uid-9", Devices: []Device{{Name: "channel-0"}}}); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(root, "unrelated.json"), []byte("{}"), 0o600)

	got, err := w.ClaimUIDs()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"uid-1", "uid-2"}, got); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	if err := w.Delete("uid-1"); err != nil {
		t.Fatal(err)
	}
	if err := w.Delete("uid-1"); err != nil {
		t.Errorf("deleting twice: %v", err)
	}
	got, _ = w.ClaimUIDs()
	if diff := cmp.Diff([]string{"uid-2"}, got); diff != "" {
		t.Errorf("claims after delete (-want +got):\n%s", diff)
	}
	if _, err := Resolve(root, "k8s.gpu.nvidia.com/claim=uid-1-gpu-0"); err == nil {
		t.Error("a deleted claim's device still resolves")
	}
}

func TestNewWriterRejectsBadInput(t *testing.T) {
	if _, err := NewWriter("", "gpu.nvidia.com"); err == nil {
		t.Error("empty root accepted")
	}
	if _, err := NewWriter(t.TempDir(), "bad_driver!"); err == nil {
		t.Error("invalid driver name accepted")
	}
}
