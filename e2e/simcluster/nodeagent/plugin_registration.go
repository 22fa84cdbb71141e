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
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager/cache"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager/operationexecutor"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager/reconciler"
	"k8s.io/kubernetes/pkg/kubelet/util"
)

// KubeletReconcileInterval is how often the kubelet's plugin manager
// reconciler registers what its watcher found (pluginmanager's
// loopSleepDuration): a simulated node registers a plugin no sooner than a
// real one does.
const KubeletReconcileInterval = time.Second

// pluginRegistration is the kubelet's plugin manager (pluginmanager.NewPluginManager):
// the same desired and actual state of the world, the same reconciler and
// operation executor, so plugins register through the real registration gRPC
// (GetInfo, NotifyRegistrationStatus) and the DRA manager's own handler. Its
// watcher handles the registry directory's create and remove events as the
// kubelet's pluginwatcher does; the one difference is that every simulated
// node's watcher shares one inotify instance (registryWatcher): the kubelet
// takes one per node, and a host allows a user 128 by default
// (fs.inotify.max_user_instances), which a simulated cluster of more nodes
// would exceed. (A scan of each node's directory every 100 ms, what stood in
// before, took a quarter of the simulator's CPU at 1,026 nodes.)
type pluginRegistration struct {
	dir        string
	desired    cache.DesiredStateOfWorld
	reconciler reconciler.Reconciler
	// ctx is Run's, for the event handlers' logs.
	ctx context.Context
}

func newPluginRegistration(dir string, reconcileInterval time.Duration) *pluginRegistration {
	desired := cache.NewDesiredStateOfWorld()
	return &pluginRegistration{
		dir:     dir,
		desired: desired,
		reconciler: reconciler.NewReconciler(
			operationexecutor.NewOperationExecutor(operationexecutor.NewOperationGenerator(&record.FakeRecorder{})),
			reconcileInterval, desired, cache.NewActualStateOfWorld(),
		),
		ctx: context.Background(),
	}
}

// AddHandler registers the handler of a plugin type (the DRA manager's).
func (p *pluginRegistration) AddHandler(pluginType string, handler cache.PluginHandler) {
	p.reconciler.AddHandler(pluginType, handler)
}

// Run registers and deregisters plugins as their sockets come and go, until
// ctx ends.
func (p *pluginRegistration) Run(ctx context.Context) error {
	p.ctx = ctx
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return fmt.Errorf("plugin registry %s: %w", p.dir, err)
	}
	defer registryWatcher.forget(p)
	// Watch first, then walk: a socket created in between is seen twice,
	// which only refreshes its timestamp, as on the kubelet.
	if err := p.traverse(p.dir); err != nil {
		return err
	}
	go p.reconciler.Run(ctx)
	<-ctx.Done()
	return nil
}

// traverse watches dir and its subdirectories and adds the sockets in them
// (the kubelet's traversePluginDir).
func (p *pluginRegistration) traverse(dir string) error {
	if err := registryWatcher.watch(dir, p); err != nil {
		return fmt.Errorf("watch plugin registry %s: %w", dir, err)
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil && path == dir:
			return fmt.Errorf("walk plugin registry %s: %w", path, err)
		case err != nil || path == dir:
			return nil // gone mid-walk: its remove event follows
		case d.IsDir():
			return registryWatcher.watch(path, p)
		}
		p.addSocket(path)
		return nil
	})
}

// handle is the kubelet's watcher loop body for one event of this node's
// registry.
func (p *pluginRegistration) handle(ev fsnotify.Event) {
	logger := klog.FromContext(p.ctx)
	switch {
	case ev.Has(fsnotify.Create):
		fi, err := os.Stat(ev.Name)
		if err != nil {
			logger.V(2).Info("Plugin registry entry gone before it was handled", "path", ev.Name, "err", err)
			return
		}
		if fi.IsDir() && !strings.HasPrefix(fi.Name(), ".") {
			if err := p.traverse(ev.Name); err != nil {
				logger.Error(err, "Watching a new plugin registry directory failed", "path", ev.Name)
			}
			return
		}
		p.addSocket(ev.Name)
	case ev.Has(fsnotify.Remove):
		p.desired.RemovePlugin(ev.Name)
	}
}

// addSocket puts a socket in the desired state, or refreshes its timestamp
// so that a re-created socket (a restarted plugin) is registered again.
// Names starting with "." are not plugins, as on the kubelet (editors,
// atomic renames, rolling-update temporaries), nor are other files.
func (p *pluginRegistration) addSocket(path string) {
	if strings.HasPrefix(filepath.Base(path), ".") {
		return
	}
	if isSocket, _ := util.IsUnixDomainSocket(path); !isSocket {
		return
	}
	if err := p.desired.AddOrUpdatePlugin(p.ctx, path); err != nil {
		klog.FromContext(p.ctx).Error(err, "Adding a plugin socket to the desired state failed", "path", path)
	}
}

// WatchPlugins registers the plugins whose sockets appear under dir with
// the handler of pluginType (the DRA manager's GetWatcherHandler), as a
// node agent does, until ctx ends: for a test that drives plugins through
// the kubelet's DRA manager without a whole node (the process-kill harness,
// which measures no timing and restarts plugins by the hundred, so its
// reconciler runs every 100 ms rather than the kubelet's second).
func WatchPlugins(ctx context.Context, dir, pluginType string, handler cache.PluginHandler) error {
	p := newPluginRegistration(dir, 100*time.Millisecond)
	p.AddHandler(pluginType, handler)
	return p.Run(ctx)
}

// registryWatcher is the one inotify instance of every plugin registration
// in the process: events go to the registration that watches the event's
// directory. It is opened by the first watch and closed when the last
// registration is forgotten.
var registryWatcher sharedWatcher

type sharedWatcher struct {
	mu   sync.Mutex
	fsw  *fsnotify.Watcher
	dirs map[string]*pluginRegistration
}

// watch adds dir's events to p's.
func (w *sharedWatcher) watch(dir string, p *pluginRegistration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fsw == nil {
		fsw, err := fsnotify.NewWatcher()
		if err != nil {
			return err
		}
		w.fsw, w.dirs = fsw, map[string]*pluginRegistration{}
		go w.dispatch(fsw)
	}
	if owner, ok := w.dirs[dir]; ok && owner != p {
		return fmt.Errorf("%s is already watched by another plugin registration", dir)
	}
	if err := w.fsw.Add(dir); err != nil {
		return err
	}
	w.dirs[dir] = p
	return nil
}

// forget stops p's watches; the last one closes the inotify instance.
func (w *sharedWatcher) forget(p *pluginRegistration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for dir, owner := range w.dirs {
		if owner == p {
			_ = w.fsw.Remove(dir) // an error: the directory is gone, and its watch with it
			delete(w.dirs, dir)
		}
	}
	if len(w.dirs) == 0 && w.fsw != nil {
		_ = w.fsw.Close()
		w.fsw = nil
	}
}

// owner is the registration watching the directory an event of fsw happened in; nil once fsw is closed.
func (w *sharedWatcher) owner(fsw *fsnotify.Watcher, ev fsnotify.Event) *pluginRegistration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fsw != fsw {
		return nil
	}
	if ev.Has(fsnotify.Remove) {
		delete(w.dirs, ev.Name) // a removed directory's watch is gone with it
	}
	return w.dirs[filepath.Dir(ev.Name)]
}

func (w *sharedWatcher) dispatch(fsw *fsnotify.Watcher) {
	for {
		select {
		case ev, ok := <-fsw.Events:
			if !ok {
				return
			}
			if p := w.owner(fsw, ev); p != nil {
				p.handle(ev)
			}
		case err, ok := <-fsw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// Events were lost: every registration walks its directory again.
				w.rescan()
				continue
			}
			klog.Background().Error(err, "Plugin registry watcher")
		}
	}
}

// rescan re-walks every watched registry after an inotify queue overflow.
func (w *sharedWatcher) rescan() {
	w.mu.Lock()
	owners := map[*pluginRegistration]bool{}
	for _, p := range w.dirs {
		owners[p] = true
	}
	w.mu.Unlock()
	for p := range owners {
		p.resync()
	}
}

// resync brings the desired state in line with the directory after lost
// events: sockets removed meanwhile leave it, the others are added again.
func (p *pluginRegistration) resync() {
	for _, info := range p.desired.GetPluginsToRegister() {
		if _, err := os.Stat(info.SocketPath); errors.Is(err, fs.ErrNotExist) {
			p.desired.RemovePlugin(info.SocketPath)
		}
	}
	if err := p.traverse(p.dir); err != nil {
		klog.FromContext(p.ctx).Error(err, "Walking the plugin registry after lost events failed")
	}
}
