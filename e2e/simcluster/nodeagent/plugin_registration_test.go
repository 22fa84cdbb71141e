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

package nodeagent

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func listenUnix(t *testing.T, path string) net.Listener {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestScanFollowsTheRegistrySockets checks the scan that stands in for the
// kubelet's inotify watcher: sockets appear in the desired state, a socket
// created anew (a restarted plugin) is registered again, a removed one
// leaves, and other files are ignored.
func TestScanFollowsTheRegistrySockets(t *testing.T) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "reg") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	p := newPluginRegistration(dir)
	gpu := filepath.Join(dir, "gpu.nvidia.com-reg.sock")
	cd := filepath.Join(dir, "compute-domain.nvidia.com-reg.sock")
	l := listenUnix(t, gpu)
	defer func() { _ = l.Close() }()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a socket"), 0o644); err != nil {
		t.Fatal(err)
	}

	p.scan(ctx)
	if !p.desired.PluginExists(gpu) || len(p.desired.GetPluginsToRegister()) != 1 {
		t.Fatalf("after the first scan: plugins %+v, want only %s", p.desired.GetPluginsToRegister(), gpu)
	}
	first := p.desired.GetPluginsToRegister()[0].Timestamp

	l2 := listenUnix(t, cd)
	p.scan(ctx)
	if !p.desired.PluginExists(cd) {
		t.Errorf("a second plugin's socket is not in the desired state")
	}
	if got := p.desired.GetPluginsToRegister(); len(got) != 2 {
		t.Errorf("plugins %+v, want 2", got)
	}

	// The GPU plugin restarts: its socket is created anew.
	_ = l.Close()
	_ = os.Remove(gpu)
	time.Sleep(10 * time.Millisecond) // a new modification time
	l = listenUnix(t, gpu)
	p.scan(ctx)
	for _, info := range p.desired.GetPluginsToRegister() {
		if info.SocketPath == gpu && !info.Timestamp.After(first) {
			t.Errorf("a re-created socket keeps its old timestamp %v: it would not be registered again", info.Timestamp)
		}
	}

	_ = l2.Close()
	_ = os.Remove(cd)
	p.scan(ctx)
	if p.desired.PluginExists(cd) {
		t.Errorf("a removed socket is still in the desired state")
	}
}

// TestScanIgnoresDotFiles: as the kubelet's watcher, a socket whose name
// starts with "." is not a plugin (editors, atomic renames, rolling-update
// temporaries).
func TestScanIgnoresDotFiles(t *testing.T) {
	dir, err := os.MkdirTemp("", "reg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	p := newPluginRegistration(dir)
	hidden := filepath.Join(dir, ".gpu.nvidia.com-reg.sock")
	l := listenUnix(t, hidden)
	defer func() { _ = l.Close() }()
	p.scan(context.Background())
	if p.desired.PluginExists(hidden) {
		t.Errorf("a dot-file socket %s is in the desired state", hidden)
	}
}
