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
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
)

type recordingPublisher struct {
	mu   sync.Mutex
	last resourceslice.DriverResources
	n    int
	ch   chan struct{}
}

func (p *recordingPublisher) publish(_ context.Context, r resourceslice.DriverResources) error {
	p.mu.Lock()
	p.last, p.n = r, p.n+1
	p.mu.Unlock()
	select {
	case p.ch <- struct{}{}:
	default:
	}
	return nil
}

func TestRunRepublishesOnHealthChange(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver()
	pub := &recordingPublisher{ch: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	if err := d.SetPublisher(ctx, pub.publish); err != nil {
		t.Fatal(err)
	}
	<-pub.ch
	go d.Run(ctx)
	select {
	case <-d.health.eventsRegistered:
	case <-time.After(10 * time.Second):
		t.Fatal("event watch did not start")
	}
	if _, err := e.lib.InjectXid(5, 48); err != nil {
		t.Fatal(err)
	}
	select {
	case <-pub.ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no republish after a health change")
	}
	pub.mu.Lock()
	defer pub.mu.Unlock()
	var tainted []string
	for _, dev := range allDevices(pub.last) {
		if len(dev.Taints) > 0 {
			tainted = append(tainted, dev.Name)
		}
	}
	if strings.Join(tainted, ",") != "gpu-5" {
		t.Errorf("tainted devices %v, want [gpu-5]", tainted)
	}
}

func TestHandleErrorStopsOnlyOnFatalErrors(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	var fatal []error
	d := e.mustDriver(func(_ *Config, deps *Deps) { deps.Fatal = func(err error) { fatal = append(fatal, err) } })
	ctx := testContext(t)
	d.HandleError(ctx, fmt.Errorf("publish: conflict: %w", kubeletplugin.ErrRecoverable), "publishing ResourceSlices")
	if len(fatal) != 0 {
		t.Errorf("a recoverable error was fatal: %v", fatal)
	}
	d.HandleError(ctx, errors.New("fields dropped by the API server"), "publishing ResourceSlices")
	if len(fatal) != 1 || !strings.Contains(fatal[0].Error(), "publishing ResourceSlices: fields dropped") {
		t.Errorf("fatal errors %v, want the dropped-fields error", fatal)
	}
}

func TestAGPULostAtStartIsLeftOutUntilItReturns(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	if err := e.lib.SetGPULost(3, true); err != nil {
		t.Fatal(err)
	}
	d := e.mustDriver()
	names := func() []string {
		var out []string
		for _, dev := range allDevices(d.Resources()) {
			out = append(out, dev.Name)
		}
		return out
	}
	if got := strings.Join(names(), ","); strings.Contains(got, "gpu-3") || len(names()) != 7 {
		t.Errorf("devices with GPU 3 lost: %s", got)
	}
	ctx := testContext(t)
	if err := d.RediscoverLostGPUs(ctx); err != nil {
		t.Fatal(err)
	}
	if len(names()) != 7 {
		t.Error("a still-lost GPU reappeared")
	}
	if err := e.lib.SetGPULost(3, false); err != nil {
		t.Fatal(err)
	}
	if err := d.RediscoverLostGPUs(ctx); err != nil {
		t.Fatal(err)
	}
	if got := names(); len(got) != 8 {
		t.Errorf("devices after GPU 3 returned: %v", got)
	}
}
