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

package daemon

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/computedomain-operator/computedomain-operator/internal/imex"
	"github.com/computedomain-operator/computedomain-operator/internal/imex/standin"
)

// When the test binary runs with this variable set it is the IMEX stand-in
// (daemon and query tool), so the supervisor runs and kills real processes.
const runAsStandinEnv = "DAEMON_TEST_RUN_AS_IMEX_STANDIN"

func TestMain(m *testing.M) {
	if os.Getenv(runAsStandinEnv) == "1" {
		standin.Main()
	}
	os.Exit(m.Run())
}

const (
	eventually = 15 * time.Second
	poll       = 25 * time.Millisecond
)

// loopbackIPs returns n addresses 127.a.b.1..n in a random /24, so parallel
// test runs do not collide on port 50000.
func loopbackIPs(n int) []string {
	a, b := 10+rand.IntN(240), 1+rand.IntN(250)
	ips := make([]string, n)
	for i := range ips {
		ips[i] = fmt.Sprintf("127.%d.%d.%d", a, b, i+1)
	}
	return ips
}

type supervisedNode struct {
	ip     string
	sup    *Supervisor
	prober imex.Prober
	cancel context.CancelFunc
}

func startSupervised(t *testing.T, ip string, starter imex.Starter, prober func(IMEXSettings) imex.Prober) *supervisedNode {
	t.Helper()
	settings := IMEXSettings{ConfigDir: filepath.Join(t.TempDir(), "imex"), IPAddress: ip}
	sup, err := NewSupervisor(starter, settings, WithRestartDelays(10*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("supervisor of %s: %v", ip, err)
		}
	})
	return &supervisedNode{ip: ip, sup: sup, prober: prober(settings), cancel: cancel}
}

func testBinaryStarter(t *testing.T) ExecStarter {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return ExecStarter{Binary: exe, Env: append(os.Environ(), runAsStandinEnv+"=1"), StopTimeout: 2 * time.Second}
}

// waitForState polls the node's IMEX until it is ready and reports exactly
// the wanted peer states.
func waitForState(t *testing.T, n *supervisedNode, want map[string]imex.PeerState) {
	t.Helper()
	deadline := time.Now().Add(eventually)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		st, err := n.prober.Probe(ctx)
		cancel()
		diff := cmp.Diff(imex.State{Ready: true, Peers: want}, st)
		if err != nil {
			diff = err.Error()
		}
		if diff == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("IMEX state of %s (-want +got):\n%s", n.ip, diff)
		}
		time.Sleep(poll)
	}
}

func setPeers(t *testing.T, n *supervisedNode, peers []string, wantChanged bool) {
	t.Helper()
	changed, err := n.sup.SetPeers(context.Background(), peers)
	if err != nil {
		t.Fatal(err)
	}
	if changed != wantChanged {
		t.Fatalf("SetPeers(%v) on %s changed = %v, want %v", peers, n.ip, changed, wantChanged)
	}
}

func allConnected(ips []string, self string) map[string]imex.PeerState {
	m := map[string]imex.PeerState{}
	for _, ip := range ips {
		if ip != self {
			m[ip] = imex.PeerConnected
		}
	}
	return m
}

func TestSupervisorRestartsAKilledIMEXAndReloadsPeersWithoutRestart(t *testing.T) {
	ips := loopbackIPs(3)
	starter := testBinaryStarter(t)
	var nodes []*supervisedNode
	for _, ip := range ips {
		nodes = append(nodes, startSupervised(t, ip, starter, func(s IMEXSettings) imex.Prober {
			return NewCtlProber(starter.Binary, s.ConfigPath(), starter.Env)
		}))
	}
	// IMEX starts with no peers and learns them without a restart.
	for _, n := range nodes {
		waitForState(t, n, map[string]imex.PeerState{})
		setPeers(t, n, ips, true)
	}
	for _, n := range nodes {
		waitForState(t, n, allConnected(ips, n.ip))
		if got := n.sup.Starts(); got != 1 {
			t.Fatalf("%s started %d times while learning its peers, want 1", n.ip, got)
		}
	}

	// A crash of node 1's IMEX: its peers see the loss, the supervisor
	// restarts it, and the ensemble heals.
	nodes[1].sup.mu.Lock()
	pid := nodes[1].sup.proc.(*execProcess).Pid()
	nodes[1].sup.mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(eventually)
	for nodes[1].sup.Starts() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the killed IMEX was not restarted")
		}
		time.Sleep(poll)
	}
	for _, n := range nodes {
		waitForState(t, n, allConnected(ips, n.ip))
	}

	// Node 2 leaves node 0's ensemble: the nodes file changes, IMEX re-reads
	// it and keeps running.
	setPeers(t, nodes[0], []string{ips[0], ips[1]}, true)
	waitForState(t, nodes[0], allConnected(ips[:2], ips[0]))
	setPeers(t, nodes[0], []string{ips[0], ips[1]}, false)
	if got := nodes[0].sup.Starts(); got != 1 {
		t.Errorf("node 0 started %d times, want 1 (peer changes must not restart IMEX)", got)
	}
}

func TestInProcessStandinLosesAStoppedPeer(t *testing.T) {
	ips := loopbackIPs(2)
	var nodes []*supervisedNode
	for _, ip := range ips {
		nodes = append(nodes, startSupervised(t, ip, standin.InProcessStarter{}, func(IMEXSettings) imex.Prober {
			return standin.NewCommandPortProber(ip)
		}))
	}
	for _, n := range nodes {
		setPeers(t, n, ips, true)
	}
	for _, n := range nodes {
		waitForState(t, n, allConnected(ips, n.ip))
	}
	nodes[1].cancel()
	waitForState(t, nodes[0], map[string]imex.PeerState{ips[1]: imex.PeerDisconnected})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if st, err := nodes[1].prober.Probe(ctx); err != nil || st.Ready {
		t.Errorf("stopped node probes as %+v, %v; want not ready", st, err)
	}
}
