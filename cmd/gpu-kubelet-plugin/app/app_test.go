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

package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"sigs.k8s.io/yaml"

	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin/kubelettest"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
	"github.com/computedomain-operator/computedomain-operator/kubeletplugin/gpu"
)

func noEnv(string) (string, bool) { return "", false }

func TestParseRejects(t *testing.T) {
	cases := map[string]struct {
		args    []string
		wantErr string
	}{
		// The flags every plugin has are tested in internal/draplugin.
		"a stray argument names the subcommand": {args: []string{"--node-name=n", "extra"}, wantErr: `unexpected arguments ["extra"]: the only subcommands are inspect`},
		"--compare-profile is inspect's only":   {args: []string{"--node-name=n", "--compare-profile=hgx-h100-8"}, wantErr: "unknown flag: --compare-profile"},
		"inspect checks the shared flags too":   {args: []string{"inspect", "--node-name=n", "--nvml=fake"}, wantErr: "allowed: real, mock"},
		"a relative driver root":                {args: []string{"--node-name=n", "--driver-root=driver-root"}, wantErr: `--driver-root "driver-root": must be an absolute path`},
		"a relative driver root host path":      {args: []string{"--node-name=n", "--driver-root-host-path=run/nvidia/driver"}, wantErr: `--driver-root-host-path "run/nvidia/driver": must be an absolute path`},
		"a relative MPS control binary":         {args: []string{"--node-name=n", "--mps-control-binary=usr/bin/nvidia-cuda-mps-control"}, wantErr: `--mps-control-binary "usr/bin/nvidia-cuda-mps-control": must be an absolute path`},
		"a usage retention under an hour":       {args: []string{"--node-name=n", "--usage-retention=5m"}, wantErr: "--usage-retention 5m0s: must be at least 1h"},
		"consumable shares that are no mode":    {args: []string{"--node-name=n", "--feature-gates=ConsumableShares=true", "--consumable-shares=half"}, wantErr: `--consumable-shares "half": allowed: disabled, unlimited, memory, or a positive integer`},
		"zero consumable shares":                {args: []string{"--node-name=n", "--feature-gates=ConsumableShares=true", "--consumable-shares=0"}, wantErr: `--consumable-shares "0": allowed`},
		"consumable shares with the gate off":   {args: []string{"--node-name=n", "--consumable-shares=unlimited"}, wantErr: "--consumable-shares unlimited needs the feature gate ConsumableShares"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := parse(tc.args, noEnv); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

type nodeDirs struct {
	hostRoot, cdiRoot, registrar, plugins string
}

// newNodeDirs makes a fake host root for a mock profile and short socket
// directories (unix socket paths are limited to 108 bytes).
func newNodeDirs(t *testing.T, profile, node string) nodeDirs {
	t.Helper()
	p, err := mock.LoadProfile(profile)
	if err != nil {
		t.Fatal(err)
	}
	base, err := os.MkdirTemp("", "gkp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	d := nodeDirs{hostRoot: filepath.Join(base, "host"), cdiRoot: filepath.Join(base, "cdi"), registrar: filepath.Join(base, "reg"), plugins: filepath.Join(base, "plg")}
	if _, err := hostroot.Fake(d.hostRoot, p.FakeHostRootSpec(node)); err != nil {
		t.Fatal(err)
	}
	return d
}

func (d nodeDirs) args(node, profile string, extra ...string) []string {
	return append([]string{
		"--node-name=" + node, "--nvml=mock", "--nvml-mock-profile=" + profile, "--nvml-mock-fault-file=",
		"--host-root=" + d.hostRoot, "--cdi-root=" + d.cdiRoot,
		"--kubelet-registrar-directory-path=" + d.registrar, "--kubelet-plugins-directory-path=" + d.plugins,
	}, extra...)
}

func TestInspectPrintsSlicesAndChangesNothing(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	dirs := newNodeDirs(t, "a100-40gb-mig", "node-a")
	var out bytes.Buffer
	args := append([]string{"inspect"}, dirs.args("node-a", "a100-40gb-mig", "--partitionable-mig", "--nvml-mock-mig=dynamic")...)
	if err := run(ctx, args, noEnv, &out, nil); err != nil {
		t.Fatal(err)
	}
	var report InspectReport
	if err := yaml.UnmarshalStrict(out.Bytes(), &report); err != nil {
		t.Fatalf("inspect output is not the report: %v\n%s", err, out.String())
	}
	counters, devices := 0, 0
	for _, s := range report.ResourceSlices {
		counters += len(s.Spec.SharedCounters)
		devices += len(s.Spec.Devices)
		if s.Spec.NodeName == nil || *s.Spec.NodeName != "node-a" || s.Spec.Pool.Name != "node-a" {
			t.Errorf("slice %s is not node-a's", s.Name)
		}
		for _, dev := range s.Spec.Devices {
			if _, ok := dev.Attributes["resource.kubernetes.io/pcieRoot"]; !ok {
				t.Errorf("%s: no pcieRoot from the fake sysfs", dev.Name)
			}
		}
	}
	if counters != 8 || devices == 0 {
		t.Errorf("%d counter sets and %d devices, want 8 and some", counters, devices)
	}
	if report.CliqueID != "" {
		t.Errorf("A100 node reports clique %q", report.CliqueID)
	}
	for _, dir := range []string{dirs.cdiRoot, dirs.plugins, dirs.registrar} {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("inspect created %s", dir)
		}
	}
}

// TestServeAsSeenByTheKubelet drives a running plugin the way the kubelet
// does: registration, then NodePrepareResources/NodeUnprepareResources over
// the DRA socket. The API server is a fake clientset; the simulated cluster
// covers the real one.
func TestServeAsSeenByTheKubelet(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	const node = "tray-1"
	dirs := newNodeDirs(t, "gb200-nvl72", node)
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "default", UID: "claim-1"},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpus", Driver: gpu.DefaultDriverName, Pool: node, Device: "gpu-2"}},
		}}},
	}
	client := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, UID: "node-uid"}}, claim)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, dirs.args(node, "gb200-nvl72"), noEnv, &bytes.Buffer{}, func(*options) (kubernetes.Interface, error) { return client, nil })
	}()

	regSock := filepath.Join(dirs.registrar, "gpu.nvidia.com-reg.sock")
	info, dra := kubelettest.Register(ctx, t, regSock, done)
	if info.Name != gpu.DefaultDriverName || info.Type != registerapi.DRAPlugin {
		t.Errorf("plugin info %+v", info)
	}
	resp, err := dra.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{{Namespace: "default", Name: "job", Uid: "claim-1"}}})
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Claims["claim-1"]
	if r == nil || r.Error != "" || len(r.Devices) != 1 {
		t.Fatalf("prepare response %+v", resp)
	}
	view, err := cdi.Resolve(dirs.cdiRoot, r.Devices[0].CdiDeviceIds...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(view.DeviceNodes, " "), "/dev/nvidia2") {
		t.Errorf("container devices %v lack /dev/nvidia2", view.DeviceNodes)
	}
	// The driver root defaults to the host root, whose fake driver is there.
	for _, want := range []string{"/usr/bin/nvidia-smi", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"} {
		if !slices.Contains(view.Mounts, want) {
			t.Errorf("container mounts %v lack %s", view.Mounts, want)
		}
	}

	kubelettest.Eventually(t, "the node clique label", func() bool {
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		return err == nil && strings.Contains(n.Labels[gpu.CliqueLabel], ".32766")
	})
	kubelettest.PublishedDevices(ctx, t, client, 4)

	kubelettest.Unprepare(ctx, t, dra, "default", "job", "claim-1")
	if _, err := cdi.Resolve(dirs.cdiRoot, r.Devices[0].CdiDeviceIds...); err == nil {
		t.Error("the claim's CDI device still resolves after unprepare")
	}
	cancel()
	kubelettest.Returned(t, done)
}

func TestDriverRootDefaults(t *testing.T) {
	cases := map[string]struct {
		args                   []string
		wantRoot, wantHostPath string
	}{
		"on the host, the driver root is the host root": {
			args:     []string{"--node-name=n"},
			wantRoot: "/", wantHostPath: "/",
		},
		"the driver root follows --host-root and names itself": {
			args:     []string{"--node-name=n", "--host-root=/sim/node-a"},
			wantRoot: "/sim/node-a", wantHostPath: "/sim/node-a",
		},
		"the chart's mount of a driver container's root": {
			args:     []string{"--node-name=n", "--host-root=/host", "--driver-root=/driver-root", "--driver-root-host-path=/run/nvidia/driver"},
			wantRoot: "/driver-root", wantHostPath: "/run/nvidia/driver",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, err := parse(tc.args, noEnv)
			if err != nil {
				t.Fatal(err)
			}
			if o.driverRoot != tc.wantRoot || o.driverRootHostPath != tc.wantHostPath {
				t.Errorf("driver root %q on host path %q, want %q on %q", o.driverRoot, o.driverRootHostPath, tc.wantRoot, tc.wantHostPath)
			}
		})
	}
}

func TestMPSControlBinaryFromFlagOrEnvironment(t *testing.T) {
	cases := map[string]struct {
		args []string
		env  map[string]string
		want string
	}{
		"NVIDIA's path in the driver root":     {args: []string{"--node-name=n", "--driver-root=/driver-root"}, want: "/driver-root/usr/bin/nvidia-cuda-mps-control"},
		"the chart's MPS_CONTROL_BINARY":       {args: []string{"--node-name=n"}, env: map[string]string{"MPS_CONTROL_BINARY": "/usr/bin/mps-control-standin"}, want: "/usr/bin/mps-control-standin"},
		"the flag over the environment":        {args: []string{"--node-name=n", "--mps-control-binary=/opt/mps"}, env: map[string]string{"MPS_CONTROL_BINARY": "/usr/bin/mps-control-standin"}, want: "/opt/mps"},
		"an empty MPS_CONTROL_BINARY is unset": {args: []string{"--node-name=n"}, env: map[string]string{"MPS_CONTROL_BINARY": ""}, want: "/usr/bin/nvidia-cuda-mps-control"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, err := parse(tc.args, func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if err != nil {
				t.Fatal(err)
			}
			if o.mpsControlBinary != tc.want {
				t.Errorf("MPS control binary = %q, want %q", o.mpsControlBinary, tc.want)
			}
		})
	}
}

func TestConsumableSharesFromFlagOrEnvironment(t *testing.T) {
	cases := map[string]struct {
		args []string
		env  map[string]string
		want gpu.Shares
	}{
		"off unless asked":                  {args: []string{"--node-name=n"}, want: gpu.Shares{Mode: gpu.SharesDisabled}},
		"the chart's CONSUMABLE_SHARES":     {args: []string{"--node-name=n", "--feature-gates=ConsumableShares=true"}, env: map[string]string{"CONSUMABLE_SHARES": "memory"}, want: gpu.Shares{Mode: gpu.SharesMemory}},
		"the flag over the environment":     {args: []string{"--node-name=n", "--feature-gates=ConsumableShares=true", "--consumable-shares=4"}, env: map[string]string{"CONSUMABLE_SHARES": "memory"}, want: gpu.Shares{Mode: gpu.SharesCount, Count: 4}},
		"an empty CONSUMABLE_SHARES is off": {args: []string{"--node-name=n"}, env: map[string]string{"CONSUMABLE_SHARES": ""}, want: gpu.Shares{Mode: gpu.SharesDisabled}},
		"unlimited with the gate on":        {args: []string{"--node-name=n", "--feature-gates=ConsumableShares=true", "--consumable-shares=unlimited"}, want: gpu.Shares{Mode: gpu.SharesUnlimited}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, err := parse(tc.args, func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if err != nil {
				t.Fatal(err)
			}
			if o.shares != tc.want {
				t.Errorf("shares = %+v, want %+v", o.shares, tc.want)
			}
		})
	}
}
