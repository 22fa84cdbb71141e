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
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/utils/clock"

	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
	"github.com/computedomain-operator/computedomain-operator/internal/driverroot"
	"github.com/computedomain-operator/computedomain-operator/internal/fabricmanager"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/mps"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	"github.com/computedomain-operator/computedomain-operator/internal/usage"
)

// nodeState is what the plugin knows of its node, under one lock: the devices
// it discovered and the claims its checkpoint records, with what preparing a
// claim changes (NVML settings and MIG instances, CDI specs, the usage ledger,
// the devices gauge). Prepare, Unprepare and UnprepareStale are its behavior
// (prepare.go, unprepare.go, stale_claims.go); they hold the lock for their
// whole run, so they see and change devices and claims together. The Driver
// only adapts the kubelet's calls to it.
type nodeState struct {
	cfg         Config
	nvml        nvml.Interface
	cdi         *cdi.Writer
	hostDevices hostDevices
	driverFiles driverroot.Files
	// health gives the taints the devices gauge counts as unhealthy.
	health  *healthMonitor
	metrics *Metrics
	usage   *usage.Ledger
	clock   clock.WithTicker
	crash   draplugin.CrashHook
	// mps runs the MPS control daemons of MPS claims; nil: none (MPS claims
	// fail).
	mps mps.Control
	// pci moves GPUs between the nvidia and vfio-pci drivers.
	pci *pciBus
	// fm is the Fabric Manager (FabricManagerPartitioning); nil: none.
	fm fabricmanager.Interface
	// inventoryChanged is set when prepare or unprepare re-read the
	// inventory, for the driver to republish (takeInventoryChanged).
	inventoryChanged bool

	// mu guards ledger and inventory.
	mu        sync.Mutex
	ledger    *checkpoint.Ledger
	inventory Inventory
}

// newNodeState loads the checkpoint (discarding state of an earlier boot),
// discovers the node's devices and the driver's files, and removes MIG
// instances, CDI specs, MPS control daemons and sharing settings that no
// recorded claim owns.
func newNodeState(ctx context.Context, cfg Config, deps Deps, health *healthMonitor) (*nodeState, error) {
	s := &nodeState{
		cfg: cfg, nvml: deps.NVML, cdi: deps.CDI, health: health,
		metrics: deps.Metrics, usage: deps.Usage, clock: deps.Clock, crash: deps.Crash, mps: deps.MPS,
		fm: deps.FabricManager,
	}
	var err error
	if s.pci, err = newPCIBus(hostroot.New(cfg.HostRoot)); err != nil {
		return nil, err
	}
	if s.ledger, err = checkpoint.OpenLedger(ctx, deps.Checkpoint); err != nil {
		return nil, err
	}
	if s.hostDevices, err = readHostDevices(hostroot.New(cfg.HostRoot)); err != nil {
		return nil, err
	}
	if s.driverFiles, err = discoverDriverFiles(ctx, cfg); err != nil {
		return nil, err
	}
	if s.inventory, err = s.discover(ctx); err != nil {
		return nil, err
	}
	if err := s.reconcilePassthrough(ctx); err != nil {
		return nil, err
	}
	if err := s.removeUnknownMigInstances(ctx); err != nil {
		return nil, err
	}
	if err := s.removeOrphanCDISpecs(ctx); err != nil {
		return nil, err
	}
	if err := s.reconcileMpsDaemons(ctx); err != nil {
		return nil, err
	}
	if err := s.resetUnheldSharing(ctx); err != nil {
		return nil, err
	}
	// Claims prepared before a crash that hit before their usage was
	// recorded, and intervals of claims forgotten since.
	s.reportUsageQuarantine(ctx)
	s.syncUsageLocked(ctx)
	s.compactUsage(ctx)
	s.updateDeviceMetrics()
	return s, nil
}

// poolName is the node's pool.
func (s *nodeState) poolName() string { return s.cfg.NodeName }

// discover reads the node's devices: the GPUs through NVML, with
// PassthroughSupport the GPUs' PCI functions from sysfs, with a Fabric Manager
// its partitions.
func (s *nodeState) discover(ctx context.Context) (Inventory, error) {
	inv, err := DiscoverInventory(ctx, s.nvml, s.cfg.HostRoot)
	if err != nil {
		return Inventory{}, err
	}
	if s.cfg.passthrough() {
		if inv.PCIGPUs, err = s.pci.nvidiaGPUs(); err != nil {
			return Inventory{}, err
		}
		inv.PCIeRoots = map[string]string{}
		for _, f := range inv.PCIGPUs {
			inv.PCIeRoots[f.BusID] = pcieRootOf(ctx, s.cfg.HostRoot, f.BusID)
		}
		inv.IOMMUFD = s.pci.iommuFDEnabled()
	}
	if s.fm != nil {
		parts, err := s.fm.Partitions()
		if err != nil {
			return Inventory{}, fmt.Errorf("read Fabric Manager partitions: %w", err)
		}
		inv.Fabric = fabricmanager.Memberships(parts)
	}
	return inv, nil
}

// refreshInventory re-reads the inventory (a GPU moved between nvidia and
// vfio-pci) and marks it for republishing; the caller holds the lock or runs
// at start.
func (s *nodeState) refreshInventory(ctx context.Context) error {
	inv, err := s.discover(ctx)
	if err != nil {
		return fmt.Errorf("re-read the node's devices: %w", err)
	}
	s.inventory = inv
	s.inventoryChanged = true
	return nil
}

// takeInventoryChanged reports, and clears, a change of the inventory since
// the last call.
func (s *nodeState) takeInventoryChanged() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := s.inventoryChanged
	s.inventoryChanged = false
	return changed
}

// decodeDeviceData reads what the checkpoint keeps of a prepared device.
func decodeDeviceData(dev checkpoint.PreparedDevice) (deviceData, error) {
	var data deviceData
	if len(dev.Data) == 0 {
		return data, nil
	}
	if err := json.Unmarshal(dev.Data, &data); err != nil {
		return deviceData{}, fmt.Errorf("device %s: stored data: %w", dev.Device, err)
	}
	return data, nil
}

// syncUsage brings the usage ledger in step with the recorded claims and
// drops closed intervals older than the retention.
func (s *nodeState) syncUsage(ctx context.Context) {
	s.mu.Lock()
	s.syncUsageLocked(ctx)
	s.mu.Unlock()
	s.compactUsage(ctx)
}

// snapshot returns the inventory and the recorded claims as they are now.
// Both are safe to read after the lock is released: the claims map is
// copy-on-write and the inventory is replaced, never changed in place, apart
// from its clique, a string copied with it.
func (s *nodeState) snapshot() (Inventory, map[string]checkpoint.ClaimState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inventory, s.ledger.Claims()
}

// gpuUUIDs lists the GPUs of the inventory.
func (s *nodeState) gpuUUIDs() []string {
	inv, _ := s.snapshot()
	uuids := make([]string, 0, len(inv.GPUs))
	for _, g := range inv.GPUs {
		uuids = append(uuids, g.UUID)
	}
	return uuids
}

// createdMigInstances maps every MIG instance a recorded claim created to
// the claim's device name: GPU UUID → device name → GPU instance ID.
func createdMigInstances(claims map[string]checkpoint.ClaimState) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, cs := range claims {
		for _, dev := range cs.Devices {
			var data deviceData
			if json.Unmarshal(dev.Data, &data) != nil || !data.CreatedMig || data.UUID == "" {
				continue
			}
			if out[data.ParentUUID] == nil {
				out[data.ParentUUID] = map[string]int{}
			}
			out[data.ParentUUID][dev.Device] = data.GIID
		}
	}
	return out
}

// preparedDeviceNames is the set of devices some recorded claim holds.
func preparedDeviceNames(claims map[string]checkpoint.ClaimState) map[string]bool {
	out := map[string]bool{}
	for _, cs := range claims {
		for _, dev := range cs.Devices {
			out[dev.Device] = true
		}
	}
	return out
}
