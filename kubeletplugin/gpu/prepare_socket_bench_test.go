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
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin/kubelettest"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

// socketCase is one claim shape of the socket benchmark.
type socketCase struct {
	profile string
	opts    []envOption
	devices func(d *Driver) []string
	// wantDevices is how many devices the prepare result lists.
	wantDevices int
}

var socketCaseOrder = []string{"1-gpu", "4-mig-static", "4-mig-partitionable"}

func socketCases() map[string]socketCase {
	return map[string]socketCase{
		"1-gpu": {
			profile: "hgx-h100-8", wantDevices: 1,
			devices: func(*Driver) []string { return []string{"gpu-0"} },
		},
		"4-mig-static": {
			profile: "a100-40gb-mig", wantDevices: 4,
			devices: func(d *Driver) []string {
				var names []string
				for _, g := range d.Inventory().GPUs {
					for _, m := range g.MigDevices {
						if len(names) < 4 {
							names = append(names, migDeviceName(g.Minor, m.Profile, m.GIProfileID, m.Placement.Start))
						}
					}
				}
				return names
			},
		},
		"4-mig-partitionable": {
			profile: "a100-40gb-mig", opts: []envOption{withDynamicMIG()}, wantDevices: 4,
			devices: func(d *Driver) []string {
				g := d.Inventory().GPUs[0]
				var names []string
				for _, p := range g.MigProfiles {
					if p.Name == "1g.5gb" {
						for _, pl := range p.Placements[:4] {
							names = append(names, migDeviceName(g.Minor, p.Name, p.GIProfileID, pl.Start))
						}
					}
				}
				return names
			},
		},
	}
}

// measureOverSocket serves a driver of the case's node through the
// kubeletplugin helper on a unix socket (under TMPDIR, with the checkpoint;
// CDI specs on /dev/shm when present, as /var/run/cdi is tmpfs on a node),
// registers it as the kubelet does, and runs rounds prepare+unprepare calls
// over the DRA socket, each with a new claim that the helper reads from the
// API (a fake clientset). It returns the latency of every call.
func measureOverSocket(tb testing.TB, tc socketCase, rounds int, beforeLoop func()) (prepare, unprepare kubelettest.Latencies) {
	tb.Helper()
	e := newTestNodeEnv(tb, tc.profile, tc.opts...)
	if dir, err := os.MkdirTemp("/dev/shm", "cdi"); err == nil {
		tb.Cleanup(func() { _ = os.RemoveAll(dir) })
		e.cdiRoot = dir
	}
	d := e.mustDriver()
	devices := tc.devices(d)
	if len(devices) != tc.wantDevices {
		tb.Fatalf("devices %v, want %d", devices, tc.wantDevices)
	}
	// Short: unix socket paths are limited to 108 bytes.
	base, err := os.MkdirTemp("", "gs")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(base) })
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	tb.Cleanup(cancel)
	client := fake.NewClientset()
	helper, err := draplugin.Start(ctx, d, draplugin.Options{
		DriverName: testDriver, NodeName: testNode, KubeClient: client,
		RegistrarDir: filepath.Join(base, "reg"), PluginsDir: filepath.Join(base, "plg"),
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(helper.Stop)
	_, dra := kubelettest.Register(ctx, tb, filepath.Join(base, "reg", testDriver+"-reg.sock"), nil)

	check := func(r *drapb.NodePrepareResourceResponse) error {
		if len(r.Devices) != tc.wantDevices {
			return fmt.Errorf("%d devices, want %d", len(r.Devices), tc.wantDevices)
		}
		return nil
	}
	return kubelettest.MeasureRounds(ctx, tb, client, dra, rounds, func(i int) *resourceapi.ResourceClaim {
		uid := fmt.Sprintf("claim-%d", i)
		cb := utiltesting.MakeResourceClaim(uid, "default").UID(types.UID(uid))
		for _, dev := range devices {
			cb.Device("req", testDriver, testNode, dev)
		}
		return cb.Obj()
	}, check, beforeLoop)
}

// BenchmarkPrepareOverSocket measures NodePrepareResources and
// NodeUnprepareResources of the gpu.nvidia.com plugin as the kubelet calls
// them: gRPC over the plugin's unix socket, the kubeletplugin helper reading
// the claim from the API (a fake clientset, no network), the driver's
// checkpoint writes (fsync, under TMPDIR), the CDI spec and, for partitionable
// MIG, creating and destroying the MIG instances in the mock NVML. It reports
// the p50 and p99 of each call (docs/benchmarks.md):
//
//	go test -p 1 -run '^$' -bench BenchmarkPrepareOverSocket -benchtime 2000x ./kubeletplugin/gpu/
//	TMPDIR=/dev/shm go test -p 1 -run '^$' -bench BenchmarkPrepareOverSocket -benchtime 2000x ./kubeletplugin/gpu/
func BenchmarkPrepareOverSocket(b *testing.B) {
	cases := socketCases()
	for _, name := range socketCaseOrder {
		b.Run(name, func(b *testing.B) {
			prepare, unprepare := measureOverSocket(b, cases[name], b.N, b.ResetTimer)
			b.StopTimer()
			prepare.Report(b, "prepare")
			unprepare.Report(b, "unprepare")
		})
	}
}

// TestPrepareOverSocketBenchmarkRuns is the benchmark's reduced run in the
// test suite: every claim shape prepares and unprepares over the socket 20
// times and the figures are sane (not a timing goal: this machine is shared).
func TestPrepareOverSocketBenchmarkRuns(t *testing.T) {
	cases := socketCases()
	for _, name := range socketCaseOrder {
		t.Run(name, func(t *testing.T) {
			const rounds = 20
			prepare, unprepare := measureOverSocket(t, cases[name], rounds, nil)
			prepare.CheckSane(t, "prepare", rounds, 10*time.Second)
			unprepare.CheckSane(t, "unprepare", rounds, 10*time.Second)
		})
	}
}
