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

	"k8s.io/kubernetes/pkg/kubelet/pluginmanager/cache"
)

func listenUnix(t *testing.T, path string) net.Listener {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// registryDir is a short temporary directory: unix socket paths are limited to 108 bytes.
func registryDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "reg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// startRegistration runs a plugin registration of dir until the test ends.
func startRegistration(t *testing.T, dir string) *pluginRegistration {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := newPluginRegistration(dir, KubeletReconcileInterval)
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return p
}

// eventually fails the test unless cond holds within 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5 s: %s", what)
		}
	}
}

// watchedBy tells whether the shared watcher sends dir's events to p.
func watchedBy(dir string, p *pluginRegistration) bool {
	registryWatcher.mu.Lock()
	defer registryWatcher.mu.Unlock()
	return registryWatcher.dirs[dir] == p
}

func pluginInfo(p *pluginRegistration, path string) (cache.PluginInfo, bool) {
	for _, info := range p.desired.GetPluginsToRegister() {
		if info.SocketPath == path {
			return info, true
		}
	}
	return cache.PluginInfo{}, false
}

// TestRegistrationFollowsTheRegistrySockets checks the watcher that stands in
// for the kubelet's: a socket there before it starts and one created later
// appear in the desired state, a socket created anew (a restarted plugin) is
// registered again, a removed one leaves, and other files are ignored.
func TestRegistrationFollowsTheRegistrySockets(t *testing.T) {
	dir := registryDir(t)
	gpu := filepath.Join(dir, "gpu.nvidia.com-reg.sock")
	cd := filepath.Join(dir, "compute-domain.nvidia.com-reg.sock")
	l := listenUnix(t, gpu)
	defer func() { _ = l.Close() }()
	p := startRegistration(t, dir)

	eventually(t, "the socket present at the start is in the desired state", func() bool { return p.desired.PluginExists(gpu) })
	first, _ := pluginInfo(p, gpu)

	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a socket"), 0o644); err != nil {
		t.Fatal(err)
	}
	l2 := listenUnix(t, cd)
	eventually(t, "a second plugin's socket is in the desired state", func() bool { return p.desired.PluginExists(cd) })

	// The GPU plugin restarts: its socket is created anew.
	_ = l.Close()
	_ = os.Remove(gpu)
	eventually(t, "the removed socket leaves the desired state", func() bool { return !p.desired.PluginExists(gpu) })
	l = listenUnix(t, gpu)
	eventually(t, "the re-created socket is registered again (a newer timestamp)", func() bool {
		info, ok := pluginInfo(p, gpu)
		return ok && info.Timestamp.After(first.Timestamp)
	})

	_ = l2.Close()
	_ = os.Remove(cd)
	eventually(t, "a removed socket leaves the desired state", func() bool { return !p.desired.PluginExists(cd) })
	if got := p.desired.GetPluginsToRegister(); len(got) != 1 {
		t.Errorf("plugins %+v, want only %s (a file that is no socket is no plugin)", got, gpu)
	}
}

// TestRegistrationIgnoresDotFiles: as the kubelet's watcher, a socket whose
// name starts with "." is not a plugin (editors, atomic renames,
// rolling-update temporaries).
func TestRegistrationIgnoresDotFiles(t *testing.T) {
	dir := registryDir(t)
	p := startRegistration(t, dir)
	hidden := filepath.Join(dir, ".gpu.nvidia.com-reg.sock")
	l := listenUnix(t, hidden)
	defer func() { _ = l.Close() }()
	visible := filepath.Join(dir, "gpu.nvidia.com-reg.sock")
	l2 := listenUnix(t, visible)
	defer func() { _ = l2.Close() }()
	eventually(t, "the plugin's socket is in the desired state", func() bool { return p.desired.PluginExists(visible) })
	if p.desired.PluginExists(hidden) {
		t.Errorf("a dot-file socket %s is in the desired state", hidden)
	}
}

// TestRegistrationWatchesNewSubdirectories: as the kubelet's watcher, a
// directory created in the registry is watched and its sockets registered.
func TestRegistrationWatchesNewSubdirectories(t *testing.T) {
	dir := registryDir(t)
	p := startRegistration(t, dir)
	sub := filepath.Join(dir, "d")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new directory is watched", func() bool { return watchedBy(sub, p) })
	sock := filepath.Join(sub, "x.sock")
	l := listenUnix(t, sock)
	defer func() { _ = l.Close() }()
	eventually(t, "a socket in the new directory is in the desired state", func() bool { return p.desired.PluginExists(sock) })
}

// TestRegistrationsShareOneWatcherAndKeepToTheirNode: the nodes of one
// process share an inotify instance, and each node registers only the
// sockets of its own registry; the last one to stop closes the instance.
func TestRegistrationsShareOneWatcherAndKeepToTheirNode(t *testing.T) {
	dirA, dirB := registryDir(t), registryDir(t)
	ctxA, cancelA := context.WithCancel(context.Background())
	a := newPluginRegistration(dirA, KubeletReconcileInterval)
	doneA := make(chan error, 1)
	go func() { doneA <- a.Run(ctxA) }()
	b := startRegistration(t, dirB)

	sockA, sockB := filepath.Join(dirA, "a.sock"), filepath.Join(dirB, "b.sock")
	la, lb := listenUnix(t, sockA), listenUnix(t, sockB)
	defer func() { _ = la.Close(); _ = lb.Close() }()
	eventually(t, "each node has its socket", func() bool { return a.desired.PluginExists(sockA) && b.desired.PluginExists(sockB) })
	if a.desired.PluginExists(sockB) || b.desired.PluginExists(sockA) {
		t.Errorf("a node registered the other node's socket: a %+v, b %+v", a.desired.GetPluginsToRegister(), b.desired.GetPluginsToRegister())
	}
	registryWatcher.mu.Lock()
	shared := registryWatcher.fsw
	registryWatcher.mu.Unlock()
	if shared == nil {
		t.Fatal("no shared watcher while two registrations run")
	}

	cancelA()
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	sockB2 := filepath.Join(dirB, "b2.sock")
	lb2 := listenUnix(t, sockB2)
	defer func() { _ = lb2.Close() }()
	eventually(t, "the node still running keeps seeing its sockets after the other stopped", func() bool { return b.desired.PluginExists(sockB2) })
	registryWatcher.mu.Lock()
	defer registryWatcher.mu.Unlock()
	if registryWatcher.fsw != shared {
		t.Errorf("a node that stopped closed the watcher another node still uses")
	}
	for dir, owner := range registryWatcher.dirs {
		if owner == a {
			t.Errorf("the stopped node's directory %s is still watched", dir)
		}
	}
}

// TestRegistrationResyncsAfterLostEvents: after an inotify queue overflow
// the desired state is rebuilt from the directory.
func TestRegistrationResyncsAfterLostEvents(t *testing.T) {
	dir := registryDir(t)
	p := startRegistration(t, dir)
	eventually(t, "the registry is watched", func() bool { return watchedBy(dir, p) })
	kept, gone := filepath.Join(dir, "kept.sock"), filepath.Join(dir, "gone.sock")
	// As if both events had been lost: the desired state says gone, not kept.
	if err := p.desired.AddOrUpdatePlugin(context.Background(), gone); err != nil {
		t.Fatal(err)
	}
	registryWatcher.mu.Lock()
	fsw := registryWatcher.fsw
	registryWatcher.mu.Unlock()
	_ = fsw.Remove(dir) // no events from here on
	l := listenUnix(t, kept)
	defer func() { _ = l.Close() }()
	registryWatcher.rescan()
	if !p.desired.PluginExists(kept) || p.desired.PluginExists(gone) {
		t.Errorf("after the rescan: plugins %+v, want only %s", p.desired.GetPluginsToRegister(), kept)
	}
}
