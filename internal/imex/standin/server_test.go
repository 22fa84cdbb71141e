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

package standin

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/computedomain-operator/computedomain-operator/internal/imex"
)

// When the test binary runs with this variable set it is the stand-in
// process itself, so tests can kill a real process without building one.
const runAsStandinEnv = "IMEXSTANDIN_TEST_RUN_AS_DAEMON"

func TestMain(m *testing.M) {
	if os.Getenv(runAsStandinEnv) == "1" {
		Main()
	}
	os.Exit(m.Run())
}

const (
	eventually = 10 * time.Second
	poll       = 20 * time.Millisecond
)

// node is one simulated node: its own loopback address, config and nodes file.
type node struct {
	ip, configPath, nodesPath string
	cfg                       imex.Config
	// network is where its in-process stand-in listens and dials.
	network Network
}

// networks are the networks an in-process stand-in runs on, by name: each
// in-process test runs on both, so the in-memory one keeps TCP's behavior.
func networks() map[string]func() Network {
	return map[string]func() Network{
		"tcp":    func() Network { return TCP },
		"memory": func() Network { return NewMemoryNetwork() },
	}
}

// onEveryNetwork runs test as a subtest per network.
func onEveryNetwork(t *testing.T, test func(t *testing.T, network Network)) {
	for name, network := range networks() {
		t.Run(name, func(t *testing.T) { test(t, network()) })
	}
}

// makeNodes gives n nodes addresses 127.a.b.1..n in a random /24, so parallel
// test runs on one machine do not collide on port 50000; their in-process
// stand-ins run on network.
func makeNodes(t *testing.T, n int, network Network) []node {
	t.Helper()
	a, b := 10+rand.IntN(240), 1+rand.IntN(250)
	dir := t.TempDir()
	var nodes []node
	var all []string
	for i := range n {
		all = append(all, fmt.Sprintf("127.%d.%d.%d", a, b, i+1))
	}
	for i, ip := range all {
		nd := node{ip: ip, network: network, configPath: filepath.Join(dir, fmt.Sprintf("config-%d.cfg", i)), nodesPath: filepath.Join(dir, fmt.Sprintf("nodes-%d.cfg", i))}
		cfgText := fmt.Sprintf("SERVER_BIND_IP=%s\nSERVER_PORT=%d\nIMEX_CMD_BIND_INTERFACE_IP=%s\nIMEX_CMD_PORT=%d\nIMEX_NODE_CONFIG_FILE=%s\n",
			ip, imex.ServerPort, ip, imex.CommandPort, nd.nodesPath)
		writeFile(t, nd.configPath, cfgText)
		writeFile(t, nd.nodesPath, strings.Join(all, "\n")+"\n")
		cfg, err := imex.LoadConfig(nd.configPath)
		if err != nil {
			t.Fatal(err)
		}
		nd.cfg = cfg
		nodes = append(nodes, nd)
	}
	return nodes
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func startInProcess(t *testing.T, nd node) (*Server, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv := NewServer(nd.cfg, nd.network)
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon %s: %v", nd.ip, err)
		}
	})
	waitFor(t, "daemon "+nd.ip+" ready", func() bool { return srv.Ready() })
	return srv, cancel
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(eventually)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", eventually, what)
		}
		time.Sleep(poll)
	}
}

func peersOf(t *testing.T, nd node) map[string]imex.PeerState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	list, err := QueryPeersOn(ctx, nd.network, nd.cfg.CmdAddress())
	if err != nil {
		return nil
	}
	out := map[string]imex.PeerState{}
	for _, p := range list {
		out[p.Address] = p.State
	}
	return out
}

func waitForPeers(t *testing.T, nd node, want map[string]imex.PeerState) {
	t.Helper()
	deadline := time.Now().Add(eventually)
	for {
		got := peersOf(t, nd)
		diff := cmp.Diff(want, got)
		if diff == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("peers of %s (-want +got):\n%s", nd.ip, diff)
		}
		time.Sleep(poll)
	}
}

// waitForFullMesh waits until every node reports every other one connected.
func waitForFullMesh(t *testing.T, nodes []node) {
	t.Helper()
	for i, nd := range nodes {
		want := map[string]imex.PeerState{}
		for j, other := range nodes {
			if i != j {
				want[other.ip] = imex.PeerConnected
			}
		}
		waitForPeers(t, nd, want)
	}
}

func TestThreePeersConnectAndSeeALoss(t *testing.T) {
	onEveryNetwork(t, func(t *testing.T, network Network) {
		nodes := makeNodes(t, 3, network)
		var cancels []context.CancelFunc
		for _, nd := range nodes {
			_, cancel := startInProcess(t, nd)
			cancels = append(cancels, cancel)
		}
		waitForFullMesh(t, nodes)

		cancels[2]()

		for _, nd := range nodes[:2] {
			other := nodes[0].ip
			if nd.ip == other {
				other = nodes[1].ip
			}
			waitForPeers(t, nd, map[string]imex.PeerState{other: imex.PeerConnected, nodes[2].ip: imex.PeerDisconnected})
		}
	})
}

func TestReadyOnlyWhileListening(t *testing.T) {
	onEveryNetwork(t, func(t *testing.T, network Network) {
		nodes := makeNodes(t, 1, network)
		ctx := context.Background()
		if _, err := QueryOn(ctx, network, nodes[0].cfg.CmdAddress()); err == nil {
			t.Fatal("query answered before any daemon ran")
		}
		srv, cancel := startInProcess(t, nodes[0])
		got, err := QueryOn(ctx, network, nodes[0].cfg.CmdAddress())
		if err != nil || got != imex.AnswerReady {
			t.Fatalf("query = %q, %v; want %q", got, err, imex.AnswerReady)
		}
		cancel()
		waitFor(t, "daemon to stop listening", func() bool { return !srv.Ready() })
		waitFor(t, "command port to close", func() bool {
			_, err := QueryOn(ctx, network, nodes[0].cfg.CmdAddress())
			return err != nil
		})
	})
}

func TestReloadChangesPeersWithoutDroppingKeptOnes(t *testing.T) {
	onEveryNetwork(t, func(t *testing.T, network Network) {
		nodes := makeNodes(t, 3, network)
		// Node 0 starts knowing only node 1.
		writeFile(t, nodes[0].nodesPath, nodes[0].ip+"\n"+nodes[1].ip+"\n")
		srv0, _ := startInProcess(t, nodes[0])
		for _, nd := range nodes[1:] {
			startInProcess(t, nd)
		}
		waitForPeers(t, nodes[0], map[string]imex.PeerState{nodes[1].ip: imex.PeerConnected})
		before := srv0.peers[nodes[1].ip]

		writeFile(t, nodes[0].nodesPath, strings.Join([]string{nodes[0].ip, nodes[1].ip, nodes[2].ip}, "\n"))
		srv0.Reload()
		waitForPeers(t, nodes[0], map[string]imex.PeerState{nodes[1].ip: imex.PeerConnected, nodes[2].ip: imex.PeerConnected})
		srv0.mu.Lock()
		kept := srv0.peers[nodes[1].ip] == before
		srv0.mu.Unlock()
		if !kept {
			t.Error("reload replaced the link to an unchanged peer")
		}

		writeFile(t, nodes[0].nodesPath, nodes[0].ip+"\n"+nodes[2].ip+"\n")
		srv0.Reload()
		waitForPeers(t, nodes[0], map[string]imex.PeerState{nodes[2].ip: imex.PeerConnected})
	})
}

func TestKilledProcessIsSeenByItsPeersAndSIGHUPReloads(t *testing.T) {
	nodes := makeNodes(t, 3, TCP)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var procs []*exec.Cmd
	for _, nd := range nodes {
		cmd := exec.Command(exe, "-c", nd.configPath)
		cmd.Env = append(os.Environ(), runAsStandinEnv+"=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	waitForFullMesh(t, nodes)

	// The query tool is the same program with -q.
	var out strings.Builder
	if err := Run(context.Background(), []string{"-c", nodes[0].configPath, "-q"}, &out, false); err != nil || out.String() != "READY\n" {
		t.Fatalf("-q printed %q, err %v; want READY", out.String(), err)
	}

	if err := procs[1].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitForPeers(t, nodes[0], map[string]imex.PeerState{nodes[1].ip: imex.PeerDisconnected, nodes[2].ip: imex.PeerConnected})
	waitForPeers(t, nodes[2], map[string]imex.PeerState{nodes[0].ip: imex.PeerConnected, nodes[1].ip: imex.PeerDisconnected})
	out.Reset()
	if err := Run(context.Background(), []string{"-c", nodes[1].configPath, "-q"}, &out, false); !errors.Is(err, ErrNotReady) || out.String() != "NOT_READY\n" {
		t.Fatalf("-q of a killed daemon printed %q, err %v; want NOT_READY, ErrNotReady", out.String(), err)
	}

	// Node 0 drops node 1 from its nodes file; SIGHUP makes it re-read it.
	writeFile(t, nodes[0].nodesPath, nodes[0].ip+"\n"+nodes[2].ip+"\n")
	if err := procs[0].Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitForPeers(t, nodes[0], map[string]imex.PeerState{nodes[2].ip: imex.PeerConnected})
	out.Reset()
	if err := Run(context.Background(), []string{"-c", nodes[0].configPath, "-N"}, &out, false); err != nil || out.String() != nodes[2].ip+" CONNECTED\n" {
		t.Fatalf("-N printed %q, err %v", out.String(), err)
	}
}

// One TCP link per pair of peers (the lower address dials): an ensemble of n nodes holds n(n-1)/2 links,
// and losing the node that dials every link is seen by all its peers at once, as is losing the one that
// dials none.
func TestOneLinkPerPairAndTheDialersLossIsSeen(t *testing.T) {
	onEveryNetwork(t, func(t *testing.T, network Network) {
		nodes := makeNodes(t, 4, network)
		var servers []*Server
		var cancels []context.CancelFunc
		for _, nd := range nodes {
			srv, cancel := startInProcess(t, nd)
			servers = append(servers, srv)
			cancels = append(cancels, cancel)
		}
		waitForFullMesh(t, nodes)
		inbound := func(s *Server) int {
			s.mu.Lock()
			defer s.mu.Unlock()
			return len(s.inbound)
		}
		for i, srv := range servers {
			// Node i is dialed by the i nodes of lower address and dials the others.
			waitFor(t, fmt.Sprintf("node %s holding %d inbound links", nodes[i].ip, i), func() bool { return inbound(srv) == i })
		}

		cancels[0]() // the lowest address: the dialer of each of its links
		for _, nd := range nodes[1:] {
			want := map[string]imex.PeerState{nodes[0].ip: imex.PeerDisconnected}
			for _, other := range nodes[1:] {
				if other.ip != nd.ip {
					want[other.ip] = imex.PeerConnected
				}
			}
			waitForPeers(t, nd, want)
		}
	})
}

// TestHelpPrintsUsageAndSucceeds: `imex-standin --help` (as `docker run IMAGE imex-standin --help` runs it) prints
// the flags on stdout and exits 0, like the operator's other binaries.
func TestHelpPrintsUsageAndSucceeds(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		var out strings.Builder
		if err := Run(context.Background(), []string{arg}, &out, false); err != nil {
			t.Fatalf("Run(%s) = %v, want nil", arg, err)
		}
		if !strings.Contains(out.String(), "-c string") {
			t.Errorf("Run(%s) printed %q, want the flags", arg, out.String())
		}
	}
}
