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
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager/cache"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager/operationexecutor"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager/reconciler"
	"k8s.io/kubernetes/pkg/kubelet/util"
)

// pluginScanInterval is how often a node's plugin registry directory is
// scanned for registration sockets; reconcileInterval how often the
// kubelet's reconciler registers what the scan found (the kubelet: 1 s).
const (
	pluginScanInterval = 100 * time.Millisecond
	reconcileInterval  = 100 * time.Millisecond
)

// pluginRegistration is the kubelet's plugin manager (pluginmanager.NewPluginManager)
// with its inotify watcher replaced by a scan of the registry directory: the
// same desired and actual state of the world, the same reconciler and
// operation executor, so plugins register through the real registration gRPC
// (GetInfo, NotifyRegistrationStatus) and the DRA manager's own handler. The
// kubelet's watcher takes one inotify instance per node, and a host allows a
// user 128 by default (fs.inotify.max_user_instances): a simulated cluster of
// more nodes would leave the rest with no plugins registered ("too many open
// files").
type pluginRegistration struct {
	dir        string
	desired    cache.DesiredStateOfWorld
	reconciler reconciler.Reconciler
	// seen is each socket's modification time at the last scan: a socket
	// created anew (a plugin restart) is registered again.
	seen map[string]time.Time
}

func newPluginRegistration(dir string) *pluginRegistration {
	desired := cache.NewDesiredStateOfWorld()
	return &pluginRegistration{
		dir:     dir,
		desired: desired,
		reconciler: reconciler.NewReconciler(
			operationexecutor.NewOperationExecutor(operationexecutor.NewOperationGenerator(&record.FakeRecorder{})),
			reconcileInterval, desired, cache.NewActualStateOfWorld(),
		),
		seen: map[string]time.Time{},
	}
}

// AddHandler registers the handler of a plugin type (the DRA manager's).
func (p *pluginRegistration) AddHandler(pluginType string, handler cache.PluginHandler) {
	p.reconciler.AddHandler(pluginType, handler)
}

// Run registers and deregisters plugins as their sockets come and go, until
// ctx ends.
func (p *pluginRegistration) Run(ctx context.Context) {
	go p.reconciler.Run(ctx)
	t := time.NewTicker(pluginScanInterval)
	defer t.Stop()
	for {
		p.scan(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// scan adds new (or re-created) sockets to the desired state and removes
// those that are gone, as the kubelet's watcher does on create and delete
// events.
func (p *pluginRegistration) scan(ctx context.Context) {
	logger := klog.FromContext(ctx)
	found := map[string]time.Time{}
	_ = filepath.WalkDir(p.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // a directory that went away mid-walk: the next scan sees
		}
		if strings.HasPrefix(d.Name(), ".") {
			return nil // as the kubelet's watcher: names starting with "." are not plugins
		}
		if isSocket, _ := util.IsUnixDomainSocket(path); !isSocket {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		found[path] = info.ModTime()
		return nil
	})
	for path, mod := range found {
		if last, ok := p.seen[path]; ok && last.Equal(mod) {
			continue
		}
		if err := p.desired.AddOrUpdatePlugin(ctx, path); err != nil {
			logger.Error(err, "Adding a plugin socket to the desired state failed", "path", path)
			continue
		}
		p.seen[path] = mod
	}
	for path := range p.seen {
		if _, ok := found[path]; !ok {
			p.desired.RemovePlugin(path)
			delete(p.seen, path)
		}
	}
}

// WatchPlugins registers the plugins whose sockets appear under dir with
// the handler of pluginType (the DRA manager's GetWatcherHandler), as a
// node agent does, until ctx ends: for a test that drives plugins through
// the kubelet's DRA manager without a whole node (the process-kill harness).
func WatchPlugins(ctx context.Context, dir, pluginType string, handler cache.PluginHandler) {
	p := newPluginRegistration(dir)
	p.AddHandler(pluginType, handler)
	p.Run(ctx)
}
