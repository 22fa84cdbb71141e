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
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
	"github.com/computedomain-operator/computedomain-operator/internal/fabricmanager"
	"github.com/computedomain-operator/computedomain-operator/internal/featuregates"
	"github.com/computedomain-operator/computedomain-operator/internal/mps"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	"github.com/computedomain-operator/computedomain-operator/internal/usage"
)

// DefaultDriverName is the driver this plugin serves unless configured
// otherwise.
const DefaultDriverName = apiv1beta1.GPUDriverName

// DefaultMPSControlBinary is where NVIDIA's driver installs
// nvidia-cuda-mps-control, relative to the driver root.
const DefaultMPSControlBinary = "usr/bin/nvidia-cuda-mps-control"

// MPSDaemonsDir is the directory, in the plugin's data directory (next to
// the checkpoint), that holds the MPS control daemons' directories.
const MPSDaemonsDir = "mps"

// DefaultUsageRetention is Config.UsageRetention's default.
const DefaultUsageRetention = 744 * time.Hour

// Config is the plugin's static configuration.
type Config struct {
	DriverName string
	NodeName   string
	// PartitionableMIG publishes MIG-enabled GPUs as counters plus every
	// profile/placement and creates MIG instances on prepare.
	PartitionableMIG bool
	// HostRoot is where the host's /proc and /sys are visible.
	HostRoot string
	// DriverRoot is where the plugin sees the NVIDIA driver's root (its
	// libraries and tools); "" is HostRoot.
	DriverRoot string
	// DriverRootHostPath is DriverRoot's path on the host, which the CDI
	// mounts name; "" is DriverRoot (the plugin sees the host's paths).
	DriverRootHostPath string
	// RequireDriverFiles makes a driver root without a driver an error (real
	// NVML); otherwise claims get no driver files (the mock on a node
	// without a driver).
	RequireDriverFiles bool
	Health             HealthOptions
	// Gates are the feature gates (FeatureGates); the zero Set is their
	// defaults.
	Gates featuregates.Set
	// Shares publishes devices for several claims at once (consumable
	// capacity); it needs the ConsumableShares gate. The zero value is
	// disabled.
	Shares Shares
	// StaleClaimInterval is how often claims whose ResourceClaim is gone are
	// cleaned up. Default 1 minute.
	StaleClaimInterval time.Duration
	// CliqueRefreshInterval is how often the NVLink clique is re-read, and
	// the longest wait between retries of a failed clique label write.
	// Default 30 seconds.
	CliqueRefreshInterval time.Duration
	// UsageRetention is how long closed intervals stay in the usage ledger
	// (Deps.Usage); the metering component must read a node's ledger within
	// it. Default 744 hours (31 days).
	UsageRetention time.Duration
}

// Deps are the driver's injected dependencies.
type Deps struct {
	// NVML must be initialized.
	NVML       nvml.Interface
	CDI        *cdi.Writer
	Checkpoint *checkpoint.Store
	// Claims may be nil: then no stale-claim cleanup runs.
	Claims  draplugin.ClaimGetter
	Metrics *Metrics
	Clock   clock.WithTicker
	// Labeler may be nil: then the node label is not managed.
	Labeler CliqueLabeler
	// Usage may be nil: then no usage ledger is written.
	Usage *usage.Ledger
	// Fatal, if set, is called with background errors that retrying cannot
	// fix; the app cancels its run with it.
	Fatal func(error)
	// Crash is the crash tests' hook, asked at the named crash points from
	// the start-up reconcile on; nil in production.
	Crash draplugin.CrashHook
	// MPS starts and stops the MPS control daemon of each MPS claim
	// (mps.Exec of nvidia-cuda-mps-control). nil: MPS claims fail at
	// prepare.
	MPS mps.Control
	// FabricManager is the node's Fabric Manager in shared NVSwitch mode,
	// used with the FabricManagerPartitioning gate. nil: the node has none
	// (no partition attributes, no partition checks).
	FabricManager fabricmanager.Interface
}

// Driver is the gpu.nvidia.com kubeletplugin.DRAPlugin: a thin adapter from
// the helper's calls to the node's state (state.go), which prepares and
// unprepares, plus publishing (publish.go), health (health.go) and the clique
// label (clique_label.go).
type Driver struct {
	cfg    Config
	nvml   nvml.Interface
	claims draplugin.ClaimGetter
	clock  clock.WithTicker
	health *healthMonitor
	fatal  func(error)
	pub    draplugin.Publisher
	label  cliqueLabel
	state  *nodeState
}

var _ kubeletplugin.DRAPlugin = &Driver{}

// NewDriver loads the node's state (newNodeState: the checkpoint, the
// devices, the driver's files, the start-up cleanup) and returns a driver
// ready to publish and prepare.
func NewDriver(ctx context.Context, cfg Config, deps Deps) (*Driver, error) {
	if cfg.StaleClaimInterval <= 0 {
		cfg.StaleClaimInterval = time.Minute
	}
	if cfg.CliqueRefreshInterval <= 0 {
		cfg.CliqueRefreshInterval = 30 * time.Second
	}
	if cfg.UsageRetention <= 0 {
		cfg.UsageRetention = DefaultUsageRetention
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	if cfg.Gates.IsZero() {
		cfg.Gates = featuregates.Defaults(FeatureGates)
	}
	if err := CheckShares(cfg.Shares, cfg.Gates); err != nil {
		return nil, err
	}
	if !cfg.Gates.Enabled(FabricManagerPartitioning) {
		deps.FabricManager = nil
	}
	if deps.Metrics == nil {
		deps.Metrics = NewMetrics(nil)
	}
	health := newHealthMonitor(cfg.DriverName, deps.NVML, deps.Clock, cfg.Health, deps.Metrics)
	state, err := newNodeState(ctx, cfg, deps, health)
	if err != nil {
		return nil, err
	}
	return &Driver{
		cfg: cfg, nvml: deps.NVML, claims: deps.Claims, clock: deps.Clock, health: health,
		fatal: deps.Fatal, label: newCliqueLabel(deps.Labeler), state: state,
	}, nil
}

// poolName is the node's pool.
func (d *Driver) poolName() string { return d.cfg.NodeName }

// Inventory returns what the driver discovered.
func (d *Driver) Inventory() Inventory {
	inv, _ := d.state.snapshot()
	return inv
}

// Run runs, until ctx ends, health monitoring (republishing on every
// change), the stale-claim cleanup (at once, then every StaleClaimInterval),
// the clique refresh with lost-GPU rediscovery (every CliqueRefreshInterval)
// and the retries of a failed clique label write.
func (d *Driver) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	changes, cancel := d.health.subscribe()
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	if d.cfg.Gates.Enabled(NVMLDeviceHealthCheck) {
		wg.Go(func() { d.health.run(ctx, d.state.gpuUUIDs) })
	}
	wg.Go(func() { draplugin.SweepStaleClaims(ctx, d.clock, d.cfg.StaleClaimInterval, d.CleanupStaleClaims) })
	wg.Go(func() { d.retryCliqueLabel(ctx) })
	cliqueTicker := d.clock.NewTicker(d.cfg.CliqueRefreshInterval)
	defer cliqueTicker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changes:
			d.state.updateDeviceMetrics()
			if err := d.Publish(ctx); err != nil {
				logger.Error(err, "Publishing health change failed")
			}
		case <-cliqueTicker.C():
			if err := d.RediscoverLostGPUs(ctx); err != nil {
				logger.Error(err, "Rediscovering lost GPUs failed")
			}
			if err := d.RefreshClique(ctx); err != nil {
				logger.Error(err, "Clique refresh failed")
			}
			d.state.syncUsage(ctx)
		}
	}
}

// PrepareResourceClaims implements kubeletplugin.DRAPlugin
// (nodeState.Prepare).
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := d.state.Prepare(ctx, claims)
	d.publishInventoryChange(ctx)
	return out, nil
}

// publishInventoryChange republishes when prepare or unprepare changed the
// inventory (a GPU moved between nvidia and vfio-pci).
func (d *Driver) publishInventoryChange(ctx context.Context) {
	if !d.state.takeInventoryChanged() {
		return
	}
	if err := d.Publish(ctx); err != nil {
		klog.FromContext(ctx).Error(err, "Publishing the changed inventory failed")
	}
}

// UnprepareResourceClaims implements kubeletplugin.DRAPlugin
// (nodeState.Unprepare).
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := d.state.Unprepare(ctx, claims)
	d.publishInventoryChange(ctx)
	return out, nil
}

// CleanupStaleClaims unprepares claims whose ResourceClaim is gone
// (nodeState.UnprepareStale).
func (d *Driver) CleanupStaleClaims(ctx context.Context) error {
	err := d.state.UnprepareStale(ctx, d.claims)
	d.publishInventoryChange(ctx)
	return err
}

// HandleError implements kubeletplugin.DRAPlugin: background errors (slice
// publishing, stale health reports) are logged; recoverable ones are retried
// by the helper, a fatal one is handed to Deps.Fatal (see
// draplugin.HandleBackgroundError).
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	draplugin.HandleBackgroundError(ctx, err, msg, d.fatal)
}
