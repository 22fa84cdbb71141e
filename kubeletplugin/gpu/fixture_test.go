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

	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
	"github.com/computedomain-operator/computedomain-operator/internal/fabricmanager"
	"github.com/computedomain-operator/computedomain-operator/internal/featuregates"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
	"github.com/computedomain-operator/computedomain-operator/internal/usage"
)

const (
	testDriver = DefaultDriverName
	testNode   = "node-1"
	testBootID = "boot-1"
)

// testNodeEnv is one simulated node: mock NVML, a temp host root, CDI root and
// checkpoint file. Drivers built from the same env share all of them, so a
// second driver is the same node after a plugin restart.
type testNodeEnv struct {
	t          testing.TB
	lib        *mock.Lib
	hostRoot   string
	cdiRoot    string
	checkpoint string
	// usage is the usage ledger's file; each driver opens it anew, as a
	// restarted plugin does.
	usage     string
	clock     *clocktesting.FakeClock
	partition bool
	// driverFiles puts the mock's driver's user-space files in the host root.
	driverFiles bool
	// shares is the plugin's --consumable-shares (with the gate on).
	shares Shares
	// mps is the node's MPS control daemons: they outlive a plugin restart,
	// as processes started in the background do.
	mps *fakeMps
	// gates are feature gates to turn on ("Name=true").
	gates []string
	// fakeRoot makes the host root a hostroot.Fake of the profile (PCI
	// sysfs with its fake kernel, /dev/vfio), whose sysfs the mock's GPUs
	// follow (mock.HostRootPCIDriver).
	fakeRoot bool
	// fabric gives the node the profile's mock Fabric Manager, fm.
	fabric bool
	fm     *fabricmanager.Mock
}

type envOption func(*mock.Config, *testNodeEnv)

func withDynamicMIG() envOption {
	return func(c *mock.Config, e *testNodeEnv) { c.MIG = mock.MIGDynamic; e.partition = true }
}

// withShares runs the plugin with --consumable-shares and the ConsumableShares gate on.
func withShares(s Shares) envOption {
	return func(_ *mock.Config, e *testNodeEnv) { e.shares = s }
}

// withPassthrough turns the PassthroughSupport gate on, on a fake host root
// whose PCI sysfs the mock's GPUs follow.
func withPassthrough() envOption {
	return func(c *mock.Config, e *testNodeEnv) {
		e.gates = append(e.gates, PassthroughSupport+"=true")
		e.fakeRoot = true
		c.PCIDriver = mock.HostRootPCIDriver(hostroot.New(e.hostRoot))
	}
}

// withFabricManager turns the FabricManagerPartitioning gate on, with the
// profile's mock Fabric Manager.
func withFabricManager() envOption {
	return func(_ *mock.Config, e *testNodeEnv) {
		e.gates = append(e.gates, FabricManagerPartitioning+"=true")
		e.fabric = true
	}
}

// withDriverFiles installs a driver of the mock's version in the host root
// (hostroot.FakeDriverFiles), so claims get its libraries and tools.
func withDriverFiles() envOption {
	return func(_ *mock.Config, e *testNodeEnv) { e.driverFiles = true }
}

func newTestNodeEnv(t testing.TB, profile string, opts ...envOption) *testNodeEnv {
	t.Helper()
	cfg := mock.Config{NodeName: testNode, Profile: profile}
	e := &testNodeEnv{t: t, hostRoot: t.TempDir(), cdiRoot: t.TempDir(),
		clock: clocktesting.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)), mps: newFakeMps()}
	for _, o := range opts {
		o(&cfg, e)
	}
	e.checkpoint = filepath.Join(t.TempDir(), "checkpoint.json")
	e.usage = filepath.Join(filepath.Dir(e.checkpoint), "usage.jsonl")
	lib, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r := lib.Init(); r != nvml.SUCCESS {
		t.Fatalf("mock init: %v", r)
	}
	e.lib = lib
	writeHostProc(t, e.hostRoot)
	if e.fakeRoot {
		if _, err := hostroot.Fake(e.hostRoot, lib.Profile().FakeHostRootSpec(testNode)); err != nil {
			t.Fatal(err)
		}
	}
	if e.fabric {
		fm, err := lib.Profile().FabricManager(filepath.Join(t.TempDir(), "fm.json"))
		if err != nil || fm == nil {
			t.Fatalf("profile %s has no Fabric Manager partitions: %v", profile, err)
		}
		e.fm = fm
	}
	if e.driverFiles {
		version, r := lib.SystemGetDriverVersion()
		if r != nvml.SUCCESS {
			t.Fatalf("mock driver version: %v", r)
		}
		if err := hostroot.FakeDriverFiles(e.hostRoot, version); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// writeHostProc writes the /proc files the plugin reads: device majors and
// the MIG capability minors, in the driver's format.
func writeHostProc(t testing.TB, root string) {
	t.Helper()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "proc/driver/nvidia-caps"), 0o755))
	must(os.WriteFile(filepath.Join(root, "proc/devices"), []byte("Character devices:\n  1 mem\n195 nvidia-frontend\n236 nvidia-caps\n510 nvidia-uvm\n"), 0o644))
	var b strings.Builder
	b.WriteString("config 1\nmonitor 2\n")
	minor := 3
	for g := range 8 {
		for gi := range 15 {
			fmt.Fprintf(&b, "gpu%d/gi%d/access %d\n", g, gi, minor)
			minor++
			for ci := range 8 {
				fmt.Fprintf(&b, "gpu%d/gi%d/ci%d/access %d\n", g, gi, ci, minor)
				minor++
			}
		}
	}
	must(os.WriteFile(filepath.Join(root, "proc/driver/nvidia-caps/mig-minors"), []byte(b.String()), 0o644))
}

// writeSysfsPCI links /sys/bus/pci/devices/<busID> to a device under a PCIe
// root, as the kernel does, so pcieRoot resolves.
func writeSysfsPCI(t *testing.T, root string, busIDs map[string]string) {
	t.Helper()
	dir := filepath.Join(root, "sys/bus/pci/devices")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for busID, pcieRoot := range busIDs {
		target := filepath.Join("../../../devices", pcieRoot, "0000:00:01.0", busID)
		if err := os.MkdirAll(filepath.Join(dir, target), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, busID)); err != nil {
			t.Fatal(err)
		}
	}
}

type driverOption func(*Config, *Deps)

func withClaims(c draplugin.ClaimGetter) driverOption {
	return func(_ *Config, d *Deps) { d.Claims = c }
}

// withBootID is the node after a reboot: same checkpoint file, new boot.
func (e *testNodeEnv) withBootID(id string) driverOption {
	return func(_ *Config, d *Deps) { d.Checkpoint = checkpoint.NewStore(e.checkpoint, id) }
}

func (e *testNodeEnv) newDriver(opts ...driverOption) (*Driver, error) {
	ctx := klog.NewContext(context.Background(), logr.Discard())
	if t, ok := e.t.(*testing.T); ok {
		_, ctx = ktesting.NewTestContext(t)
	}
	w, err := cdi.NewWriter(e.cdiRoot, testDriver)
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := Config{DriverName: testDriver, NodeName: testNode, PartitionableMIG: e.partition, HostRoot: e.hostRoot, Shares: e.shares}
	gateList := e.gates
	if e.shares.Enabled() {
		gateList = append(gateList, ConsumableShares+"=true")
	}
	if len(gateList) > 0 {
		gates, err := featuregates.Parse(FeatureGates, strings.Join(gateList, ","))
		if err != nil {
			e.t.Fatal(err)
		}
		cfg.Gates = gates
	}
	ledger, err := usage.Open(e.usage, usage.Options{Node: testNode, Clock: e.clock})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = ledger.Close() })
	deps := Deps{NVML: e.lib, CDI: w, Checkpoint: checkpoint.NewStore(e.checkpoint, testBootID), Clock: e.clock, Metrics: NewMetrics(nil), Usage: ledger, MPS: e.mps}
	if e.fm != nil {
		deps.FabricManager = e.fm
	}
	for _, o := range opts {
		o(&cfg, &deps)
	}
	return NewDriver(ctx, cfg, deps)
}

func (e *testNodeEnv) mustDriver(opts ...driverOption) *Driver {
	e.t.Helper()
	d, err := e.newDriver(opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func testContext(t *testing.T) context.Context {
	_, ctx := ktesting.NewTestContext(t)
	return ctx
}

// prepareOne prepares one claim and returns its result.
func prepareOne(t *testing.T, d *Driver, claim *resourceapi.ResourceClaim) ([]string, error) {
	t.Helper()
	res, err := d.PrepareResourceClaims(testContext(t), []*resourceapi.ResourceClaim{claim})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := res[claim.UID]
	if !ok {
		t.Fatalf("no result for claim %s", claim.UID)
	}
	var ids []string
	for _, dev := range r.Devices {
		ids = append(ids, dev.CDIDeviceIDs...)
	}
	return ids, r.Err
}

func gpuUUIDOf(t *testing.T, d *Driver, minor int) string {
	t.Helper()
	for _, g := range d.Inventory().GPUs {
		if g.Minor == minor {
			return g.UUID
		}
	}
	t.Fatalf("no GPU with minor %d", minor)
	return ""
}

func resolveCDI(root string, ids []string) ([]string, error) {
	v, err := cdi.Resolve(root, ids...)
	return v.Env, err
}

// resolveCDIView is what a container of the CDI devices sees.
func resolveCDIView(root string, ids []string) (cdi.ContainerView, error) {
	return cdi.Resolve(root, ids...)
}
