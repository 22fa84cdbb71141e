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

package processkill

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/computedomain-operator/computedomain-operator/internal/draplugin/kubelettest"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

// mpsCrashPoint is where the plugin has started a claim's MPS control daemon and not yet recorded it.
const mpsCrashPoint = "mps-daemon-started-unrecorded"

// TestGPUPluginKilledBetweenStartingAnMPSDaemonAndRecordingItLeavesNoDaemon: the GPU plugin process is
// SIGKILLed (its crash point, CDO_CRASH_AT) right after it started the MPS control daemon of an MPS claim and
// before its checkpoint records it. The daemon, a process of its own, outlives the plugin. The restarted
// plugin stops it and removes its directories before it serves; the kubelet's retried prepare starts one
// daemon again, and the unprepare of the claim leaves none.
func TestGPUPluginKilledBetweenStartingAnMPSDaemonAndRecordingItLeavesNoDaemon(t *testing.T) {
	if cluster.err != nil {
		t.Fatal(cluster.err)
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(1)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancel()
	k := &gpuKind{}
	n := newNode(ctx, t, k, "pk-mps")
	k.fakeHostRoot(t, n)
	startLogged(t, n)
	claim := createClaims(ctx, t, n, []*resourceapi.ResourceClaim{
		utiltesting.MakeResourceClaim("mps", "default").Request("gpu", "gpu.nvidia.com").Device("gpu", gpuDriver, n.name, "gpu-2").Config(resourceapi.AllocationConfigSourceClass, gpuDriver, mpsConfig).Obj(),
	})[0]
	pod := podOf(n, claim)
	uid := string(claim.UID)

	// A round of prepare and unprepare, then an unarmed incarnation on the node as it is left: its crash log
	// says at which hit the point comes (its start-up hits the points the next one's does on the same node).
	n.setActive(pod, true)
	for _, prepare := range []bool{true, false} {
		if err := call(ctx, n, prepare, pod); err != nil {
			t.Fatal(err)
		}
	}
	restartUnarmed(t, n)
	for _, prepare := range []bool{true, false} {
		if err := call(ctx, n, prepare, pod); err != nil {
			t.Fatal(err)
		}
	}
	at := slices.Index(readLines(n.proc.crashLog), mpsCrashPoint) + 1
	if at == 0 {
		t.Fatalf("a prepare of an MPS claim did not pass %s: %v", mpsCrashPoint, readLines(n.proc.crashLog))
	}
	if running, dirs := runningMPSDaemons(t, n); len(running)+len(dirs) != 0 {
		t.Fatalf("MPS control daemons after an unprepare: running %v, directories %v", running, dirs)
	}

	n.proc.stop()
	n.proc.start(at)
	if err := call(ctx, n, true, pod); err != errKilled { //nolint:errorlint // call returns errKilled itself
		t.Fatalf("the armed prepare returned %v, want the plugin killed", err)
	}
	if cause, _, err := n.proc.death(); err != nil || cause != mpsCrashPoint {
		// The armed incarnation's start-up hit other points than the unarmed one's.
		t.Fatalf("the plugin died at %q (%v), want %s", cause, err, mpsCrashPoint)
	}
	running, _ := runningMPSDaemons(t, n)
	if !slices.Equal(running, []string{uid}) {
		t.Fatalf("after the kill: MPS control daemons running %v, want the claim's (%s): the crash point comes after the start", running, uid)
	}

	n.proc.start(0)
	waitRegistered(t, n, n.proc.started)
	if running, dirs := runningMPSDaemons(t, n); len(running)+len(dirs) != 0 {
		t.Errorf("after the restart: MPS control daemons running %v, directories %v; want none (the checkpoint holds no prepared claim with a daemon)", running, dirs)
	}

	// The kubelet retries the prepare: one daemon again.
	if err := call(ctx, n, true, pod); err != nil {
		t.Fatal(err)
	}
	if running, dirs := runningMPSDaemons(t, n); !slices.Equal(running, []string{uid}) || len(dirs) != 1 {
		t.Errorf("after the retried prepare: MPS control daemons running %v, directories %v; want the claim's alone", running, dirs)
	}
	if err := call(ctx, n, false, pod); err != nil {
		t.Fatal(err)
	}
	n.setActive(pod, false)
	if running, dirs := runningMPSDaemons(t, n); len(running)+len(dirs) != 0 {
		t.Errorf("after the unprepare: MPS control daemons running %v, directories %v; want none", running, dirs)
	}
}

// restartUnarmed stops the plugin and starts it unarmed, and waits until it serves.
func restartUnarmed(t *testing.T, n *node) {
	t.Helper()
	n.proc.stop()
	n.proc.start(0)
	waitRegistered(t, n, n.proc.started)
}

// waitRegistered waits until the plugin process started at since has registered (a registration socket
// newer than since): it serves only after its start-up reconcile.
func waitRegistered(t *testing.T, n *node, since time.Time) {
	t.Helper()
	reg := filepath.Join(n.reg, gpuDriver+"-reg.sock")
	kubelettest.Eventually(t, "the plugin's registration", func() bool {
		fi, err := os.Stat(reg)
		return err == nil && fi.ModTime().After(since)
	})
}

// startLogged starts the node's plugin unarmed, logging to plugin.log in the node's directory, and stops it at
// the end of the test.
func startLogged(t *testing.T, n *node) {
	t.Helper()
	logFile, err := os.Create(filepath.Join(n.base, "plugin.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logFile.Close() })
	t.Logf("plugin log: %s", logFile.Name())
	n.proc = &process{n: n, t: t, log: logFile}
	n.proc.start(0)
	t.Cleanup(n.proc.stop)
}
