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
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// taintSummary is "key=value:effect" per tainted device.
func taintSummary(d *Driver) map[string][]string {
	out := map[string][]string{}
	for _, dev := range allDevices(d.Resources()) {
		for _, t := range dev.Taints {
			out[dev.Name] = append(out[dev.Name], t.Key+"="+t.Value+":"+string(t.Effect))
		}
	}
	return out
}

// watchHealth starts the NVML event watch of the driver's monitor.
func watchHealth(t *testing.T, d *Driver) {
	ctx, cancel := context.WithCancel(testContext(t))
	t.Cleanup(cancel)
	go func() { d.health.watchEvents(ctx, d.state.gpuUUIDs()) }()
	select {
	case <-d.health.eventsRegistered:
	case <-time.After(10 * time.Second):
		t.Fatal("the event watch never registered")
	}
}

// inject delivers an event and waits until it changed device health.
func inject(t *testing.T, d *Driver, fn func() (int, error)) {
	t.Helper()
	changes, cancel := d.health.subscribe()
	defer cancel()
	n, err := fn()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no event set received the event")
	}
	select {
	case <-changes:
	case <-time.After(10 * time.Second):
		t.Fatal("the event did not change device health")
	}
}

func TestHealthTaints(t *testing.T) {
	type step struct {
		do   func(t *testing.T, e *testNodeEnv, d *Driver)
		want map[string][]string
	}
	xid := func(gpu int, x uint64) func(*testing.T, *testNodeEnv, *Driver) {
		return func(t *testing.T, e *testNodeEnv, d *Driver) {
			inject(t, d, func() (int, error) { return e.lib.InjectXid(gpu, x) })
		}
	}
	wait := func(dt time.Duration) func(*testing.T, *testNodeEnv, *Driver) {
		return func(t *testing.T, e *testNodeEnv, d *Driver) {
			e.clock.Step(dt)
			d.health.probe(testContext(t), d.state.gpuUUIDs())
		}
	}
	// lost takes a GPU off the bus (the driver also reports Xid 79, waited
	// for here) or brings it back, then probes.
	lost := func(gpu int, isLost bool) func(*testing.T, *testNodeEnv, *Driver) {
		return func(t *testing.T, e *testNodeEnv, d *Driver) {
			set := func() (int, error) { return 1, e.lib.SetGPULost(gpu, isLost) }
			if isLost {
				inject(t, d, set)
			} else if _, err := set(); err != nil {
				t.Fatal(err)
			}
			d.health.probe(testContext(t), d.state.gpuUUIDs())
		}
	}
	cases := map[string][]step{
		"a fatal Xid taints NoSchedule and clears after a quiet window": {
			{do: xid(0, 48), want: map[string][]string{"gpu-0": {"gpu.nvidia.com/xid=48:NoSchedule"}}},
			{do: wait(10 * time.Minute), want: map[string][]string{"gpu-0": {"gpu.nvidia.com/xid=48:NoSchedule"}}},
			{do: wait(6 * time.Minute), want: map[string][]string{}},
		},
		"a benign Xid taints with effect None and clears sooner": {
			{do: xid(2, 13), want: map[string][]string{"gpu-2": {"gpu.nvidia.com/xid=13:None"}}},
			{do: wait(5 * time.Minute), want: map[string][]string{}},
		},
		"a lost GPU is tainted until it answers again, then its Xid 79 ages out": {
			{do: lost(1, true), want: map[string][]string{"gpu-1": {"gpu.nvidia.com/gpu-lost=true:NoSchedule", "gpu.nvidia.com/xid=79:NoSchedule"}}},
			{do: wait(20 * time.Minute), want: map[string][]string{"gpu-1": {"gpu.nvidia.com/gpu-lost=true:NoSchedule", "gpu.nvidia.com/xid=79:NoSchedule"}}},
			{do: lost(1, false), want: map[string][]string{"gpu-1": {"gpu.nvidia.com/xid=79:NoSchedule"}}},
			{do: wait(15 * time.Minute), want: map[string][]string{}},
		},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			e := newTestNodeEnv(t, "hgx-h100-8")
			d := e.mustDriver()
			watchHealth(t, d)
			for i, s := range steps {
				s.do(t, e, d)
				if diff := cmp.Diff(s.want, taintSummary(d)); diff != "" {
					t.Fatalf("step %d: taints (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestMIGXidTaintsOnlyItsInstance(t *testing.T) {
	e := newTestNodeEnv(t, "a100-40gb-mig")
	d := e.mustDriver()
	watchHealth(t, d)
	g := d.Inventory().GPUs[1]
	target := g.MigDevices[0]
	inject(t, d, func() (int, error) { return e.lib.InjectMigXid(1, uint32(target.GIID), uint32(target.CIID), 48) })
	want := map[string][]string{
		migDeviceName(1, target.Profile, target.GIProfileID, target.Placement.Start): {"gpu.nvidia.com/xid=48:NoSchedule"},
	}
	if diff := cmp.Diff(want, taintSummary(d)); diff != "" {
		t.Errorf("taints (-want +got):\n%s", diff)
	}
}

func TestWatchHealthStatus(t *testing.T) {
	e := newTestNodeEnv(t, "gb200-nvl72")
	d := e.mustDriver()
	watchHealth(t, d)
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	reports := make(chan kubeletplugin.DeviceHealthReport)
	done := make(chan error, 1)
	go func() { done <- d.WatchHealthStatus(ctx, reports) }()

	summary := func(r kubeletplugin.DeviceHealthReport) map[string]kubeletplugin.HealthStatus {
		out := map[string]kubeletplugin.HealthStatus{}
		for _, dh := range r.Devices {
			out[dh.DeviceName] = dh.Health
		}
		return out
	}
	// awaitReport reads reports until one matches: the periodic resend may
	// deliver an older state first.
	awaitReport := func(stage string, want map[string]kubeletplugin.HealthStatus) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		var last map[string]kubeletplugin.HealthStatus
		for {
			select {
			case r := <-reports:
				last = summary(r)
				if cmp.Equal(want, last) {
					return
				}
			case <-deadline:
				t.Fatalf("%s: no matching report; last (-want +got):\n%s", stage, cmp.Diff(want, last))
			}
		}
	}
	healthy := map[string]kubeletplugin.HealthStatus{"gpu-0": "Healthy", "gpu-1": "Healthy", "gpu-2": "Healthy", "gpu-3": "Healthy"}
	awaitReport("initial", healthy)
	inject(t, d, func() (int, error) { return e.lib.InjectXid(3, 79) })
	awaitReport("after Xid 79", map[string]kubeletplugin.HealthStatus{"gpu-0": "Healthy", "gpu-1": "Healthy", "gpu-2": "Healthy", "gpu-3": "Unhealthy"})
	e.clock.Step(16 * time.Minute)
	d.health.probe(testContext(t), d.state.gpuUUIDs())
	awaitReport("after recovery", healthy)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("WatchHealthStatus returned %v", err)
	}
}

func TestMIGXidOnAPreparedPartition(t *testing.T) {
	e := newTestNodeEnv(t, "a100-40gb-mig", withDynamicMIG())
	d := e.mustDriver()
	watchHealth(t, d)
	claim := fourSmallPartitions(t, d).Obj()
	if _, err := prepareOne(t, d, claim); err != nil {
		t.Fatal(err)
	}
	target := claim.Status.Allocation.Devices.Results[1].Device
	var data deviceData
	for _, dev := range d.state.ledger.Claims()[string(claim.UID)].Devices {
		if dev.Device == target {
			if err := json.Unmarshal(dev.Data, &data); err != nil {
				t.Fatal(err)
			}
		}
	}
	inject(t, d, func() (int, error) { return e.lib.InjectMigXid(2, uint32(data.GIID), uint32(data.CIID), 48) })
	want := map[string][]string{target: {"gpu.nvidia.com/xid=48:NoSchedule"}}
	if diff := cmp.Diff(want, taintSummary(d)); diff != "" {
		t.Errorf("taints (-want +got):\n%s", diff)
	}
}

func TestGPUsWithoutXidMonitoringAreLoggedAndCounted(t *testing.T) {
	cases := map[string]struct {
		fault       func(t *testing.T, e *testNodeEnv)
		wantGPUs    float64
		wantLogCall string
	}{
		"every GPU is watched": {},
		"NVML cannot create the event set: no GPU is watched": {
			fault:       func(_ *testing.T, e *testNodeEnv) { e.lib.FailEventSetCreate(nvml.ERROR_UNKNOWN) },
			wantGPUs:    8,
			wantLogCall: "EventSetCreate",
		},
		"a GPU lost before the watch starts is not watched": {
			fault: func(t *testing.T, e *testNodeEnv) {
				if err := e.lib.SetGPULost(3, true); err != nil {
					t.Fatal(err)
				}
			},
			wantGPUs:    1,
			wantLogCall: "DeviceGetHandleByUUID",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newTestNodeEnv(t, "hgx-h100-8")
			reg := prometheus.NewRegistry()
			d := e.mustDriver(func(_ *Config, deps *Deps) { deps.Metrics = NewMetrics(reg) })
			if tc.fault != nil {
				tc.fault(t, e)
			}
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
			defer cancel()
			stopped := make(chan struct{})
			go func() {
				defer close(stopped)
				d.health.watchEvents(ctx, d.state.gpuUUIDs())
			}()
			select {
			case <-d.health.eventsRegistered:
			case <-stopped:
			case <-time.After(10 * time.Second):
				t.Fatal("the event watch neither registered nor stopped")
			}
			if got := metricValue(t, reg, "gpu_kubelet_plugin_gpus_without_xid_monitoring", "", ""); got != tc.wantGPUs {
				t.Errorf("GPUs without Xid monitoring = %v, want %v", got, tc.wantGPUs)
			}
			logs := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
			gotLog := strings.Contains(logs, "No Xid monitoring") && strings.Contains(logs, tc.wantLogCall)
			if tc.wantLogCall != "" && !gotLog {
				t.Errorf("no error log naming %s; logs:\n%s", tc.wantLogCall, logs)
			}
			if tc.wantLogCall == "" && strings.Contains(logs, "No Xid monitoring") {
				t.Errorf("an unmonitored GPU was logged; logs:\n%s", logs)
			}
		})
	}
}
