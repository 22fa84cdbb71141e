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

package mock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// xidWatcher registers an event set for Xid events on every GPU, as the GPU
// plugin's health checker does.
func xidWatcher(t *testing.T, m *Lib) nvml.EventSet {
	t.Helper()
	set, r := m.EventSetCreate()
	if r != nvml.SUCCESS {
		t.Fatalf("EventSetCreate: %v", r)
	}
	t.Cleanup(func() { set.Free() })
	n, _ := m.DeviceGetCount()
	for i := 0; i < n; i++ {
		d, r := m.DeviceGetHandleByIndex(i)
		if r != nvml.SUCCESS {
			t.Fatalf("GPU %d: %v", i, r)
		}
		if r := d.RegisterEvents(nvml.EventTypeXidCriticalError, set); r != nvml.SUCCESS {
			t.Fatalf("RegisterEvents on GPU %d: %v", i, r)
		}
	}
	return set
}

type seenEvent struct {
	GPU       string
	Type, Xid uint64
	GI, CI    uint32
}

func drain(t *testing.T, set nvml.EventSet) []seenEvent {
	t.Helper()
	var out []seenEvent
	for {
		e, r := set.Wait(20)
		if r == nvml.ERROR_TIMEOUT {
			return out
		}
		if r != nvml.SUCCESS {
			t.Fatalf("Wait: %v", r)
		}
		uuid, _ := e.Device.GetUUID()
		out = append(out, seenEvent{uuid, e.EventType, e.EventData, e.GpuInstanceId, e.ComputeInstanceId})
	}
}

func TestInjectedXidsArriveOnTheEventSet(t *testing.T) {
	cases := map[string]struct {
		inject func(m *Lib) error
		want   func(m *Lib) []seenEvent
	}{
		"a fatal Xid 48 on GPU 2": {
			inject: func(m *Lib) error { _, err := m.InjectXid(2, 48); return err },
			want: func(m *Lib) []seenEvent {
				return []seenEvent{{GPUUUID("node-a", 2), nvml.EventTypeXidCriticalError, 48, nvml.NoInstanceID, nvml.NoInstanceID}}
			},
		},
		"benign Xids 13, 31 and 43 in order": {
			inject: func(m *Lib) error {
				for _, x := range []uint64{13, 31, 43} {
					if _, err := m.InjectXid(0, x); err != nil {
						return err
					}
				}
				return nil
			},
			want: func(m *Lib) []seenEvent {
				u := GPUUUID("node-a", 0)
				return []seenEvent{
					{u, nvml.EventTypeXidCriticalError, 13, nvml.NoInstanceID, nvml.NoInstanceID},
					{u, nvml.EventTypeXidCriticalError, 31, nvml.NoInstanceID, nvml.NoInstanceID},
					{u, nvml.EventTypeXidCriticalError, 43, nvml.NoInstanceID, nvml.NoInstanceID},
				}
			},
		},
		"an Xid attributed to a MIG instance carries its IDs": {
			inject: func(m *Lib) error { _, err := m.InjectMigXid(1, 3, 0, 31); return err },
			want: func(m *Lib) []seenEvent {
				return []seenEvent{{GPUUUID("node-a", 1), nvml.EventTypeXidCriticalError, 31, 3, 0}}
			},
		},
		"a GPU falling off the bus raises Xid 79": {
			inject: func(m *Lib) error { return m.SetGPULost(3, true) },
			want: func(m *Lib) []seenEvent {
				// Identity calls still answer on a lost GPU, so the event is attributable.
				return []seenEvent{{GPUUUID("node-a", 3), nvml.EventTypeXidCriticalError, 79, nvml.NoInstanceID, nvml.NoInstanceID}}
			},
		},
		"a double-bit ECC error reaches only sets registered for it": {
			inject: func(m *Lib) error {
				n, err := m.InjectEvent(0, nvml.EventTypeDoubleBitEccError, 0, nvml.NoInstanceID, nvml.NoInstanceID)
				if err == nil && n != 0 {
					return errors.New("a set registered only for Xids received an ECC event")
				}
				return err
			},
			want: func(*Lib) []seenEvent { return nil },
		},
		"an unknown event type is an error": {
			inject: func(m *Lib) error {
				if _, err := m.InjectEvent(0, 1<<40, 0, 0, 0); err == nil {
					return errors.New("InjectEvent with an unknown type succeeded")
				}
				return nil
			},
			want: func(*Lib) []seenEvent { return nil },
		},
		"an Xid for a GPU that does not exist is an error": {
			inject: func(m *Lib) error {
				if _, err := m.InjectXid(9, 48); err == nil {
					return errors.New("InjectXid(9) succeeded on a 4-GPU node")
				}
				return nil
			},
			want: func(*Lib) []seenEvent { return nil },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := newNode(t, Config{NodeName: "node-a", Profile: "gb200-nvl72"})
			set := xidWatcher(t, m)
			if err := tc.inject(m); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want(m), drain(t, set)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventSetCreateFailsUntilHealed(t *testing.T) {
	m := newNode(t, Config{NodeName: "node-a", Profile: "hgx-h100-8"})
	before, r := m.EventSetCreate()
	if r != nvml.SUCCESS {
		t.Fatalf("EventSetCreate = %v", r)
	}
	m.FailEventSetCreate(nvml.ERROR_NOT_SUPPORTED)
	if set, r := m.EventSetCreate(); r != nvml.ERROR_NOT_SUPPORTED || set != nil {
		t.Errorf("EventSetCreate with the fault = %v, %v; want nil, ERROR_NOT_SUPPORTED", set, r)
	}
	gpu0, _ := m.DeviceGetHandleByIndex(0)
	if r := gpu0.RegisterEvents(uint64(nvml.EventTypeXidCriticalError), before); r != nvml.SUCCESS {
		t.Errorf("registering on a set created before the fault = %v, want SUCCESS", r)
	}
	m.FailEventSetCreate(nvml.SUCCESS)
	if _, r := m.EventSetCreate(); r != nvml.SUCCESS {
		t.Errorf("EventSetCreate after healing = %v, want SUCCESS", r)
	}
}

func TestALostGPUFailsEveryCall(t *testing.T) {
	m := newNode(t, Config{NodeName: "node-a", Profile: "a100-40gb-mig"})
	gpu0, _ := m.DeviceGetHandleByIndex(0)
	mig, _ := gpu0.GetMigDeviceHandleByIndex(0)
	if err := m.SetGPULost(0, true); err != nil {
		t.Fatal(err)
	}
	got := map[string]nvml.Return{}
	_, got["GetUUID"] = gpu0.GetUUID()
	_, got["GetName"] = gpu0.GetName()
	_, got["GetMemoryInfo"] = gpu0.GetMemoryInfo()
	_, got["GetGpuFabricInfo"] = gpu0.GetGpuFabricInfo()
	_, got["MIG GetAttributes"] = mig.GetAttributes()
	_, got["DeviceGetHandleByIndex"] = m.DeviceGetHandleByIndex(0)
	_, got["other GPU GetUUID"] = func() (string, nvml.Return) { d, _ := m.DeviceGetHandleByIndex(1); return d.GetUUID() }()
	want := map[string]nvml.Return{
		"GetUUID":                nvml.SUCCESS,
		"GetName":                nvml.ERROR_GPU_IS_LOST,
		"GetMemoryInfo":          nvml.ERROR_GPU_IS_LOST,
		"GetGpuFabricInfo":       nvml.ERROR_GPU_IS_LOST,
		"MIG GetAttributes":      nvml.ERROR_GPU_IS_LOST,
		"DeviceGetHandleByIndex": nvml.ERROR_GPU_IS_LOST,
		"other GPU GetUUID":      nvml.SUCCESS,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("returns (-want +got):\n%s", diff)
	}
	if _, err := nvml.Discover(context.Background(), m); !errors.Is(err, nvml.ErrGPULost) {
		t.Errorf("Discover on a node with a lost GPU = %v, want ErrGPULost", err)
	}
	if err := m.SetGPULost(0, false); err != nil {
		t.Fatal(err)
	}
	if _, r := gpu0.GetName(); r != nvml.SUCCESS {
		t.Errorf("GetUUID after the GPU came back = %v, want SUCCESS", r)
	}
}

func TestFabricFaultsChangeTheClique(t *testing.T) {
	seven := uint32(7)
	cases := map[string]struct {
		inject  func(m *Lib) error
		wantErr error
		// degraded is the Degraded flag of GPU 1.
		degraded bool
	}{
		"a healthy tray has its rack's clique": {
			inject: func(*Lib) error { return nil },
		},
		"a GPU still registering makes the clique not ready": {
			inject:  func(m *Lib) error { return m.SetFabricState(1, FabricInProgress) },
			wantErr: nvml.ErrFabricNotReady,
		},
		"a GPU whose fabric has not started makes the clique not ready": {
			inject:  func(m *Lib) error { return m.SetFabricState(0, FabricNotStarted) },
			wantErr: nvml.ErrFabricNotReady,
		},
		"a GPU in another clique makes the node inconsistent": {
			inject:  func(m *Lib) error { return m.SetCliqueID(3, &seven) },
			wantErr: nvml.ErrCliqueMismatch,
		},
		"degraded bandwidth is reported but keeps the clique": {
			inject:   func(m *Lib) error { return m.SetFabricDegraded(1, true) },
			degraded: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := newNode(t, Config{NodeName: "node-a", Profile: "gb200-nvl72", Rack: 1})
			if err := tc.inject(m); err != nil {
				t.Fatal(err)
			}
			clique, err := nvml.NodeCliqueID(m)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("NodeCliqueID error = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil {
				if want := RackClusterUUID(DefaultClusterName, 1) + ".32766"; clique != want {
					t.Errorf("NodeCliqueID = %q, want %q", clique, want)
				}
			}
			info := discover(t, m)
			if got := info.GPUs[1].Fabric.Degraded; got != tc.degraded {
				t.Errorf("GPU 1 degraded = %v, want %v", got, tc.degraded)
			}
		})
	}
}

func TestFabricFaultsNeedAFabric(t *testing.T) {
	seven := uint32(7)
	a100 := newNode(t, Config{NodeName: "node-a", Profile: "a100-40gb-mig"})
	if err := a100.SetFabricState(0, FabricInProgress); err == nil {
		t.Error("SetFabricState on an A100 succeeded, want an error: it has no fabric")
	}
	if err := a100.ApplyFaults(Faults{GPUs: []GPUFault{{Index: 0, FabricState: FabricInProgress}}}); err == nil {
		t.Error("ApplyFaults with a fabric fault on an A100 succeeded, want an error")
	}
	hgx := newNode(t, Config{NodeName: "node-a", Profile: "hgx-h100-8"})
	if err := hgx.SetCliqueID(0, &seven); err == nil {
		t.Error("SetCliqueID on an HGX H100 succeeded, want an error: it has no clique")
	}
	if err := hgx.ApplyFaults(Faults{GPUs: []GPUFault{{Index: 0, CliqueID: &seven}}}); err == nil {
		t.Error("ApplyFaults with a clique fault on an HGX H100 succeeded, want an error")
	}
	// The fabric manager of an HGX node can still be late.
	if err := hgx.SetFabricState(0, FabricNotStarted); err != nil {
		t.Fatal(err)
	}
	if _, err := nvml.NodeCliqueID(hgx); !errors.Is(err, nvml.ErrFabricNotReady) {
		t.Errorf("NodeCliqueID with the HGX fabric manager not started = %v, want ErrFabricNotReady", err)
	}
}

func TestTheFaultFileDrivesFailures(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "faults.yaml")
	m := newNode(t, Config{NodeName: "node-a", Profile: "gb200-nvl72"})
	set := xidWatcher(t, m)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.WatchFaultFile(ctx, path, 5*time.Millisecond) }()
	defer func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("WatchFaultFile returned %v, want context.Canceled", err)
		}
	}()

	write := func(s string) {
		t.Helper()
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	write(`
gpus:
- index: 2
  lost: true
- index: 1
  fabricState: InProgress
xids:
- {gpu: 0, xid: 48}
`)
	eventually("GPU 2 to be lost", func() bool {
		d, _ := m.DeviceGetHandleByIndex(0)
		_, err := nvml.NodeCliqueID(m)
		return d != nil && errors.Is(err, nvml.ErrGPULost)
	})
	events := drain(t, set)
	xids := map[uint64]int{}
	for _, e := range events {
		xids[e.Xid]++
	}
	if diff := cmp.Diff(map[uint64]int{48: 1, 79: 1}, xids); diff != "" {
		t.Errorf("Xids from the file (-want +got):\n%s", diff)
	}

	// Rewriting the file with the same Xid entry does not deliver it again;
	// healing GPU 2 leaves only GPU 1's fabric fault.
	write(`
gpus:
- index: 1
  fabricState: InProgress
xids:
- {gpu: 0, xid: 48}
`)
	eventually("GPU 2 to come back", func() bool {
		_, err := nvml.NodeCliqueID(m)
		return errors.Is(err, nvml.ErrFabricNotReady)
	})
	if got := drain(t, set); len(got) != 0 {
		t.Errorf("events after rewriting the file = %v, want none", got)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	eventually("the node to heal once the file is gone", func() bool {
		c, err := nvml.NodeCliqueID(m)
		return err == nil && c != ""
	})
}

func TestAnInvalidFaultFileChangesNothing(t *testing.T) {
	cases := map[string]string{
		"unknown field":    "gpus: [{index: 0, lsot: true}]",
		"GPU out of range": "gpus: [{index: 4, lost: true}]",
		"bad fabric state": "gpus: [{index: 0, fabricState: Broken}]",
		"Xid on no GPU":    "xids: [{gpu: -1, xid: 48}]",
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			m := newNode(t, Config{NodeName: "node-a", Profile: "gb200-nvl72"})
			path := filepath.Join(t.TempDir(), "faults.yaml")
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := m.ApplyFaultFile(path); err == nil {
				t.Fatalf("ApplyFaultFile(%q) succeeded, want an error", content)
			}
			if _, err := nvml.NodeCliqueID(m); err != nil {
				t.Errorf("node after a rejected fault file: %v, want healthy", err)
			}
		})
	}
}

func TestFaultsRoundTripThroughAFile(t *testing.T) {
	seven, gi := uint32(7), uint32(3)
	want := Faults{
		GPUs: []GPUFault{{Index: 1, Lost: true}, {Index: 2, FabricState: FabricInProgress, FabricDegraded: true, CliqueID: &seven}},
		Xids: []XidEvent{{ID: "a", GPU: 0, Xid: 48}, {GPU: 3, Xid: 31, GI: &gi}},
	}
	path := filepath.Join(t.TempDir(), "run", "faults.yaml")
	if err := want.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseFaults(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Errorf("faults after a round trip (-want +got):\n%s", diff)
	}
	m := newNode(t, Config{NodeName: "node-a", Profile: "gb200-nvl72"})
	if err := m.ApplyFaultFile(path); err != nil {
		t.Fatalf("ApplyFaultFile: %v", err)
	}
	if _, err := nvml.NodeCliqueID(m); !errors.Is(err, nvml.ErrGPULost) {
		t.Errorf("NodeCliqueID after applying the file = %v, want ErrGPULost (GPU 1)", err)
	}
}
