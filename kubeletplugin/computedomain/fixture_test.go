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

package computedomain

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2/ktesting"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
	cdtest "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

const (
	testNode   = "node-1"
	testBootID = "boot-1"
	// imexMajor is the nvidia-caps-imex-channels major of the fake /proc/devices.
	imexMajor = 236
)

// nodeEnv is one simulated node: the clique from mock NVML, a fake host root,
// a CDI root, a checkpoint file, the domains the API knows and the Node's
// labels. Drivers built from one env are the same node across plugin
// restarts.
type nodeEnv struct {
	t          testing.TB
	clique     string
	hostRoot   string
	cdiRoot    string
	checkpoint string
	configRoot string
	domains    *fakeDomains
}

// newNodeEnv makes a node of the given mock NVML profile (gb200-nvl72 has a
// clique, hgx-h100-8 none).
func newNodeEnv(t testing.TB, profile string) *nodeEnv {
	t.Helper()
	lib, err := mock.New(mock.Config{NodeName: testNode, Profile: profile, Rack: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r := lib.Init(); r != nvml.SUCCESS {
		t.Fatalf("mock init: %v", r)
	}
	clique, err := nvml.NodeCliqueID(lib)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	e := &nodeEnv{t: t, clique: clique, hostRoot: filepath.Join(dir, "host"), cdiRoot: filepath.Join(dir, "cdi"),
		checkpoint: filepath.Join(dir, "plugin", "checkpoint.json"), configRoot: filepath.Join(dir, "plugin", "domains"),
		domains: &fakeDomains{byUID: map[types.UID]*apiv1beta1.ComputeDomain{}}}
	if _, err := hostroot.Fake(e.hostRoot, lib.Profile().FakeHostRootSpec(testNode)); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *nodeEnv) driver() *Driver {
	e.t.Helper()
	return e.driverWaiting(time.Millisecond)
}

// driverWaiting is a driver whose channel claims wait up to readyWait for their domain.
func (e *nodeEnv) driverWaiting(readyWait time.Duration) *Driver {
	e.t.Helper()
	w, err := cdi.NewWriter(e.cdiRoot, DefaultDriverName)
	if err != nil {
		e.t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(e.t)
	d, err := NewDriver(ctx, Config{NodeName: testNode, CliqueID: e.clique, OperatorNamespace: "nvidia-dra", HostRoot: hostroot.New(e.hostRoot), DomainConfigRoot: e.configRoot, ReadyWait: readyWait},
		Deps{CDI: w, Checkpoint: checkpoint.NewStore(e.checkpoint, testBootID), Domains: e.domains})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *nodeEnv) ctx() context.Context {
	_, ctx := ktesting.NewTestContext(e.t)
	return ctx
}

// fakeDomains is the plugin's view of the API's ComputeDomains: a cache
// whose every change notifies as the informer does (after the store holds
// it).
type fakeDomains struct {
	mu    sync.Mutex
	byUID map[types.UID]*apiv1beta1.ComputeDomain
	// held counts the namespaces' Holds not released.
	held map[string]int
	// listing holds the namespaces whose domains are being listed: a Hold or
	// a lookup there waits until the channel is closed.
	listing map[string]chan struct{}
	DomainChanges
}

// waitListed waits until the namespace's domains are listed.
func (f *fakeDomains) waitListed(ctx context.Context, namespace string) error {
	f.mu.Lock()
	ch := f.listing[namespace]
	f.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeDomains) set(cd *apiv1beta1.ComputeDomain) {
	f.mu.Lock()
	f.byUID[cd.UID] = cd.DeepCopy()
	f.mu.Unlock()
	f.Notify(cd.UID)
}

func (f *fakeDomains) remove(uid types.UID) {
	f.mu.Lock()
	delete(f.byUID, uid)
	f.mu.Unlock()
	f.Notify(uid)
}

// Hold implements DomainLookup: the fake keeps every domain all the time and
// counts the holds.
func (f *fakeDomains) Hold(ctx context.Context, namespace string) (func(), error) {
	if err := f.waitListed(ctx, namespace); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held == nil {
		f.held = map[string]int{}
	}
	f.held[namespace]++
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.held[namespace]--
	}, nil
}

func (f *fakeDomains) holds(namespace string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held[namespace]
}

func (f *fakeDomains) DomainByUID(ctx context.Context, namespace string, uid types.UID) (*apiv1beta1.ComputeDomain, error) {
	if err := f.waitListed(ctx, namespace); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if cd, ok := f.byUID[uid]; ok && (namespace == "" || cd.Namespace == namespace) {
		return cd.DeepCopy(), nil
	}
	return nil, nil
}

// domain builds a ComputeDomain; ready lists the nodes that its status shows
// Ready in clique, which holds channel (nil: none allocated yet).
func domain(name, ns string, uid types.UID, clique string, channel *int32, ready ...string) *apiv1beta1.ComputeDomain {
	cd := cdtest.MakeComputeDomain(name, ns).UID(uid).Obj()
	for _, n := range ready {
		cd.Status.Nodes = append(cd.Status.Nodes, apiv1beta1.ComputeDomainNode{Name: n, CliqueID: clique, Status: apiv1beta1.ComputeDomainStatusReady})
	}
	cd.Status.Cliques = []apiv1beta1.ComputeDomainClique{{CliqueID: clique, Channel: channel}}
	return cd
}

// channelClaim is a workload claim of the domain on the given slot.
func channelClaim(name, ns string, uid types.UID, slot int, domainUID types.UID, mode apiv1beta1.ComputeDomainAllocationMode) *resourceapi.ResourceClaim {
	cfg := cdtest.MakeComputeDomainChannelConfig(string(domainUID)).Obj()
	cfg.AllocationMode = mode
	return cdtest.MakeResourceClaim(name, ns).UID(uid).Device("channel", DefaultDriverName, testNode, ChannelDeviceName(slot)).
		Config(resourceapi.AllocationConfigSourceClaim, DefaultDriverName, cfg).Obj()
}

// daemonClaim is a daemon claim of the domain on the given slot.
func daemonClaim(name, ns string, uid types.UID, slot int, domainUID types.UID) *resourceapi.ResourceClaim {
	return cdtest.MakeResourceClaim(name, ns).UID(uid).Device("daemon", DefaultDriverName, testNode, DaemonDeviceName(slot)).
		Config(resourceapi.AllocationConfigSourceClaim, DefaultDriverName, cdtest.MakeComputeDomainDaemonConfig(string(domainUID))).Obj()
}

func prepare(t *testing.T, d *Driver, claim *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{claim})
	if err != nil {
		t.Fatal(err)
	}
	return res[claim.UID]
}

func unprepare(t *testing.T, d *Driver, claim *resourceapi.ResourceClaim) error {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	res, err := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{{NamespacedName: types.NamespacedName{Namespace: claim.Namespace, Name: claim.Name}, UID: claim.UID}})
	if err != nil {
		t.Fatal(err)
	}
	return res[claim.UID]
}

// view is what a container of the prepared claim sees.
func view(t *testing.T, e *nodeEnv, res kubeletplugin.PrepareResult) cdi.ContainerView {
	t.Helper()
	var ids []string
	for _, d := range res.Devices {
		ids = append(ids, d.CDIDeviceIDs...)
	}
	if len(ids) == 0 {
		return cdi.ContainerView{}
	}
	v, err := cdi.Resolve(e.cdiRoot, ids...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
