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

package backend

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestFlagsOverrideTheEnvironment(t *testing.T) {
	cases := map[string]struct {
		env  map[string]string
		args []string
		want Options
	}{
		"defaults select the real driver": {
			want: Options{Mode: ModeReal, Cluster: "sim", MIG: "static", FaultFile: DefaultFaultFile},
		},
		"the environment selects a mock node": {
			env:  map[string]string{EnvMode: "mock", EnvProfile: "gb200-nvl72", EnvNodeNameK8s: "node-a", EnvRack: "3"},
			want: Options{Mode: ModeMock, Profile: "gb200-nvl72", NodeName: "node-a", Cluster: "sim", Rack: 3, MIG: "static", FaultFile: DefaultFaultFile},
		},
		"flags win over the environment": {
			env:  map[string]string{EnvMode: "mock", EnvProfile: "gb200-nvl72", EnvNodeName: "node-a"},
			args: []string{"--nvml-mock-profile=a100-40gb-mig", "--nvml-mock-mig=dynamic", "--nvml-mock-fault-file="},
			want: Options{Mode: ModeMock, Profile: "a100-40gb-mig", NodeName: "node-a", Cluster: "sim", MIG: "dynamic"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := OptionsFromEnv(envOf(tc.env))
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, o, cmp.AllowUnexported(hostroot.Root{})); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInvalidOptionsNameTheFlag(t *testing.T) {
	cases := map[string]struct {
		o    Options
		want string
	}{
		"unknown mode":         {Options{Mode: "fake"}, "--nvml \"fake\": allowed: real, mock"},
		"mock without profile": {Options{Mode: ModeMock, NodeName: "n"}, "--nvml-mock-profile"},
		"mock without a node":  {Options{Mode: ModeMock, Profile: "hgx-h100-8"}, "--nvml-mock-node-name"},
		"unknown MIG mode":     {Options{Mode: ModeMock, Profile: "hgx-h100-8", NodeName: "n", MIG: "some"}, "--nvml-mock-mig \"some\": allowed: static, dynamic"},
		"unknown profile":      {Options{Mode: ModeMock, Profile: "dgx-z900", NodeName: "n"}, "profile \"dgx-z900\": unknown (allowed: a100-40gb-mig"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Open(context.Background(), tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestRealModeFailsCleanlyWithoutADriver(t *testing.T) {
	_, err := Open(context.Background(), Options{Mode: ModeReal, LibraryPath: filepath.Join(t.TempDir(), "libnvidia-ml.so.1")})
	if err == nil || !strings.Contains(err.Error(), "initialize NVML (real)") {
		t.Errorf("Open(real) without a driver = %v, want an initialisation error", err)
	}
}

func TestMockModeWatchesTheFaultFileInTheHostRoot(t *testing.T) {
	root, err := hostroot.Fake(t.TempDir(), hostroot.FakeSpec{NodeName: "node-a", GPUs: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lib, err := Open(ctx, Options{
		Mode: ModeMock, Profile: "gb200-nvl72", NodeName: "node-a", Rack: 1,
		FaultFile: DefaultFaultFile, FaultPollInterval: 5 * time.Millisecond, HostRoot: root,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Shutdown()
	clique, err := nvml.NodeCliqueID(lib)
	if want := mock.RackClusterUUID("sim", 1) + ".32766"; err != nil || clique != want {
		t.Fatalf("clique = %q, %v; want %q", clique, err, want)
	}
	path := root.Path(DefaultFaultFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("gpus: [{index: 2, fabricState: NotStarted}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := nvml.NodeCliqueID(lib); errors.Is(err, nvml.ErrFabricNotReady) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fault file in the host root was not applied")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestMockModeLoadsAProfileFile(t *testing.T) {
	data, err := os.ReadFile("../mock/profiles/hgx-h100-8.yaml")
	if err != nil {
		t.Fatal(err)
	}
	custom := strings.Replace(string(data), "gpuCount: 8", "gpuCount: 2", 1)
	custom = strings.Replace(custom, `["0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0", "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"]`, `["0000:1b:00.0", "0000:43:00.0"]`, 1)
	custom = strings.Replace(custom, "numaNodes: [0, 0, 0, 0, 1, 1, 1, 1]", "numaNodes: [0, 1]", 1)
	// The 8-GPU Fabric Manager partition table does not fit two GPUs.
	if i := strings.Index(custom, "  # Fabric Manager"); i >= 0 {
		custom = custom[:i]
	}
	file := filepath.Join(t.TempDir(), "two-h100.yaml")
	if err := os.WriteFile(file, []byte(custom), 0o644); err != nil {
		t.Fatal(err)
	}
	lib, err := Open(context.Background(), Options{Mode: ModeMock, ProfileFile: file, NodeName: "node-a"})
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Shutdown()
	if n, _ := lib.DeviceGetCount(); n != 2 {
		t.Errorf("GPUs from the profile file = %d, want 2", n)
	}
}

func TestMockMIGDevicesAppearInAFakeHostRoot(t *testing.T) {
	root, err := hostroot.Fake(t.TempDir(), hostroot.FakeSpec{NodeName: "node-a", GPUs: 8})
	if err != nil {
		t.Fatal(err)
	}
	lib, err := Open(context.Background(), Options{Mode: ModeMock, Profile: "a100-40gb-mig", NodeName: "node-a", HostRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Shutdown()
	// GPU 3's static layout is one 7g.40gb: GPU instance 0, compute instance 0.
	giCap, ciCap := hostroot.MIGCapabilities(3, 0, 0)
	for _, c := range []string{giCap, ciCap} {
		if _, err := root.CapabilityMinor(c); err != nil {
			t.Errorf("static MIG device capability %s: %v", c, err)
		}
	}
	dev, _ := lib.DeviceGetHandleByIndex(3)
	gi, _ := dev.GetGpuInstanceById(0)
	cis, _ := gi.GetComputeInstances(&nvml.ComputeInstanceProfileInfo{Id: nvml.COMPUTE_INSTANCE_PROFILE_7_SLICE})
	if len(cis) != 1 {
		t.Fatalf("compute instances = %d, want 1", len(cis))
	}
	if r := cis[0].Destroy(); r != nvml.SUCCESS {
		t.Fatalf("Destroy: %v", r)
	}
	if _, err := root.CapabilityMinor(ciCap); !errors.Is(err, hostroot.ErrNotFound) {
		t.Errorf("capability %s after destroying the compute instance: %v, want ErrNotFound", ciCap, err)
	}
}

// TestMockModeReadsTheNodesMachineFile: with --nvml-mock-machine-file the profile, cluster and rack come from the
// node's host root, over the flags, so that one DaemonSet serves an HGX node and a GB200 tray alike; a bad
// machine file is refused naming what is wrong.
func TestMockModeReadsTheNodesMachineFile(t *testing.T) {
	cases := map[string]struct {
		machine mock.Machine
		gpus    int
	}{
		"an HGX H100 node":   {machine: mock.Machine{Profile: "hgx-h100-8", Cluster: "sim"}, gpus: 8},
		"a GB200 NVL72 tray": {machine: mock.Machine{Profile: "gb200-nvl72", Cluster: "sim", Rack: 3}, gpus: 4},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			if err := tc.machine.WriteFile(filepath.Join(root, "etc/nvml-mock/machine.yaml")); err != nil {
				t.Fatal(err)
			}
			lib, err := Open(context.Background(), Options{Mode: ModeMock, Profile: "a100-40gb-mig", NodeName: "node-a",
				MachineFile: "/etc/nvml-mock/machine.yaml", HostRoot: hostroot.New(root)})
			if err != nil {
				t.Fatal(err)
			}
			defer lib.Shutdown()
			if n, _ := lib.DeviceGetCount(); n != tc.gpus {
				t.Errorf("GPUs = %d, want %d from the machine file's profile", n, tc.gpus)
			}
		})
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/machine.yaml"), []byte("profile: gb9000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), Options{Mode: ModeMock, NodeName: "node-a", MachineFile: "/etc/machine.yaml", HostRoot: hostroot.New(root)})
	if err == nil || !strings.Contains(err.Error(), `--nvml-mock-machine-file`) || !strings.Contains(err.Error(), `profile "gb9000": unknown (allowed:`) {
		t.Errorf("a machine file with an unknown profile: error = %v", err)
	}
}
