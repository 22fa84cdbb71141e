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

package mps_test

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/internal/mps"
	"github.com/computedomain-operator/computedomain-operator/internal/mps/standin"
)

// When the test binary runs with this variable set it is the MPS stand-in
// (daemon and control tool), so Exec runs real processes.
const runAsStandinEnv = "MPS_TEST_RUN_AS_STANDIN"

func TestMain(m *testing.M) {
	if os.Getenv(runAsStandinEnv) == "1" {
		standin.Main()
	}
	os.Exit(m.Run())
}

// standinExec is an Exec of the stand-in (this test binary) under a fresh
// root; every daemon still running at the end is killed.
func standinExec(t *testing.T) mps.Exec {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := mps.Exec{Binary: self, Root: filepath.Join(t.TempDir(), "mps"), Env: []string{runAsStandinEnv + "=1"}, QuitTimeout: 5 * time.Second}
	t.Cleanup(func() {
		ds, _ := e.Daemons()
		for _, d := range ds {
			if d.PID != 0 {
				_ = syscall.Kill(d.PID, syscall.SIGKILL)
			}
		}
	})
	return e
}

func TestExecStartsADaemonWithItsSettingsAndStopsIt(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	e := standinExec(t)
	s := mps.Settings{
		Devices:                []string{"GPU-a", "GPU-b"},
		ActiveThreadPercentage: ptr.To(40),
		PinnedMemoryLimits:     map[string]int64{"GPU-b": 2048, "GPU-a": 1024},
		MultiUser:              true,
	}
	d, err := e.Start(ctx, "claim-1-abcde", s)
	if err != nil {
		t.Fatal(err)
	}
	if d.PID == 0 {
		t.Fatal("started daemon has no process")
	}
	if _, err := os.Stat(filepath.Join(d.PipeDir(), mps.ControlName)); err != nil {
		t.Errorf("control endpoint: %v", err)
	}
	st, err := standin.ReadState(d.LogDir())
	if err != nil {
		t.Fatal(err)
	}
	want := standin.State{
		PID: d.PID, Args: []string{e.Binary, "-d", "-M"}, MultiUser: true, VisibleDevices: "GPU-a,GPU-b",
		ActiveThreadPercentage: ptr.To(40),
		PinnedMemoryLimits:     map[string]string{"GPU-a": "1024M", "GPU-b": "2048M"},
		Commands: []string{
			"set_default_active_thread_percentage 40",
			"set_default_device_pinned_mem_limit GPU-a 1024M",
			"set_default_device_pinned_mem_limit GPU-b 2048M",
		},
	}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("daemon state (-want +got):\n%s", diff)
	}
	if log, err := os.ReadFile(filepath.Join(d.LogDir(), mps.ControlLog)); err != nil || len(log) == 0 {
		t.Errorf("control log: %q, %v", log, err)
	}
	ds, err := e.Daemons()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]mps.Daemon{d.ID: d}, ds); diff != "" {
		t.Errorf("daemons (-want +got):\n%s", diff)
	}
	if err := e.Stop(ctx, mps.Daemon{ID: d.ID}); err != nil {
		t.Fatal(err)
	}
	if processAlive(d.PID) {
		t.Errorf("daemon %d still runs after Stop", d.PID)
	}
	if _, err := os.Stat(d.Dir); !os.IsNotExist(err) {
		t.Errorf("daemon directory after Stop: %v", err)
	}
}

func TestExecRunsOneDaemonPerID(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	e := standinExec(t)
	a, err := e.Start(ctx, "a", mps.Settings{Devices: []string{"GPU-a"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Start(ctx, "b", mps.Settings{Devices: []string{"GPU-b"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.PID == b.PID || a.PID == 0 || b.PID == 0 {
		t.Fatalf("want two processes, got %d and %d", a.PID, b.PID)
	}
	if err := e.Stop(ctx, a); err != nil {
		t.Fatal(err)
	}
	ds, err := e.Daemons()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]mps.Daemon{"b": b}, ds); diff != "" {
		t.Errorf("daemons after stopping a (-want +got):\n%s", diff)
	}
}

func TestExecStopsADaemonWhoseProcessDiedAndOneThatIgnoresQuit(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	e := standinExec(t)
	dead, err := e.Start(ctx, "dead", mps.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(dead.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, dead.PID)
	ds, _ := e.Daemons()
	if got := ds["dead"]; got.PID != 0 {
		t.Errorf("a killed daemon is listed with process %d", got.PID)
	}
	if err := e.Stop(ctx, dead); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead.Dir); !os.IsNotExist(err) {
		t.Errorf("directory of the dead daemon after Stop: %v", err)
	}

	stuck, err := e.Start(ctx, "stuck", mps.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	// SIGSTOP: quit is never read, so Stop must kill it.
	if err := syscall.Kill(stuck.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	e.QuitTimeout = 300 * time.Millisecond
	if err := e.Stop(ctx, stuck); err != nil {
		t.Fatal(err)
	}
	if processAlive(stuck.PID) {
		t.Errorf("stopped daemon %d still runs", stuck.PID)
	}
}

func TestExecStartFailsCleanlyWhenNoDaemonComesUp(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	root := t.TempDir()
	// A placeholder that exits 0 and starts nothing (the fake driver root's).
	fake := filepath.Join(root, "nvidia-cuda-mps-control")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho fake\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := mps.Exec{Binary: fake, Root: filepath.Join(root, "mps"), ReadyTimeout: 300 * time.Millisecond}
	_, err := e.Start(ctx, "x", mps.Settings{})
	if err == nil {
		t.Fatal("Start of a binary that starts no daemon succeeded")
	}
	t.Log(err)
	if _, statErr := os.Stat(filepath.Join(e.Root, "x")); !os.IsNotExist(statErr) {
		t.Errorf("directory after the failed start: %v", statErr)
	}

	// A refused command (a device the daemon does not serve) fails the start
	// and stops the daemon.
	e = standinExec(t)
	_, err = e.Start(ctx, "y", mps.Settings{Devices: []string{"GPU-a"}, PinnedMemoryLimits: map[string]int64{"GPU-z": 1}})
	if err == nil {
		t.Fatal("Start with a refused command succeeded")
	}
	t.Log(err)
	if ds, _ := e.Daemons(); len(ds) != 0 {
		t.Errorf("daemons after the failed start: %v", ds)
	}
	if _, err := e.Start(ctx, "../x", mps.Settings{}); err == nil {
		t.Error("an ID with a path separator was accepted")
	}
}

func processAlive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	for i := len(b) - 1; i > 0; i-- {
		if b[i] == ')' {
			return i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
		}
	}
	return false
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
