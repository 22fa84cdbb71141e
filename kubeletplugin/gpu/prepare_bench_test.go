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
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

// BenchmarkPrepareUnprepare measures one Prepare plus one Unprepare of a
// claim, as the kubelet calls them, including the checkpoint writes (fsync,
// under TMPDIR), the CDI spec (on /dev/shm when present, as /var/run/cdi is
// tmpfs on a node) and, for partitionable MIG, creating and destroying the MIG
// instances in the mock. It reports the median and p99 of single rounds.
//
//	go test -run '^$' -bench BenchmarkPrepareUnprepare -benchtime 2000x ./kubeletplugin/gpu/
func BenchmarkPrepareUnprepare(b *testing.B) {
	cases := map[string]struct {
		profile string
		opts    []envOption
		devices func(d *Driver) []string
	}{
		"1-gpu": {
			profile: "hgx-h100-8",
			devices: func(*Driver) []string { return []string{"gpu-0"} },
		},
		"4-mig-static": {
			profile: "a100-40gb-mig",
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
			profile: "a100-40gb-mig", opts: []envOption{withDynamicMIG()},
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
	for _, name := range []string{"1-gpu", "4-mig-static", "4-mig-partitionable"} {
		tc := cases[name]
		b.Run(name, func(b *testing.B) {
			e := newTestNodeEnv(b, tc.profile, tc.opts...)
			// As on a node: CDI specs on tmpfs (/var/run/cdi), the
			// checkpoint on disk (/var/lib/kubelet/plugins, here TMPDIR).
			if dir, err := os.MkdirTemp("/dev/shm", "cdi"); err == nil {
				b.Cleanup(func() { _ = os.RemoveAll(dir) })
				e.cdiRoot = dir
			}
			d := e.mustDriver()
			devices := tc.devices(d)
			if len(devices) == 0 {
				b.Fatal("no devices")
			}
			ctx := klog.NewContext(context.Background(), logr.Discard())
			rounds := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				uid := types.UID(fmt.Sprintf("claim-%d", i))
				cb := utiltesting.MakeResourceClaim(string(uid), "default").UID(uid)
				for _, dev := range devices {
					cb.Device("req", testDriver, testNode, dev)
				}
				start := time.Now()
				res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{cb.Obj()})
				if err != nil || res[uid].Err != nil {
					b.Fatalf("prepare: %v %v", err, res[uid].Err)
				}
				un, err := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{{UID: uid}})
				if err != nil || un[uid] != nil {
					b.Fatalf("unprepare: %v %v", err, un[uid])
				}
				rounds = append(rounds, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(rounds)
			b.ReportMetric(float64(rounds[len(rounds)/2].Microseconds()), "median-µs")
			b.ReportMetric(float64(rounds[(len(rounds)*99)/100].Microseconds()), "p99-µs")
		})
	}
}
