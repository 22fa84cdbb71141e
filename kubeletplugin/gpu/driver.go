package gpu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// Config is the plugin's static configuration.
type Config struct {
	DriverName string
	NodeName   string
	// PartitionableMIG publishes MIG-enabled GPUs as counters plus every
	// profile/placement and creates MIG instances on prepare.
	PartitionableMIG bool
	// HostRoot is where the host's /proc and /sys are visible.
	HostRoot string
	Health   HealthOptions
	// StaleClaimInterval is how often claims whose ResourceClaim is gone are
	// cleaned up. Default 1 minute.
	StaleClaimInterval time.Duration
	// CliqueRefreshInterval is how often the NVLink clique is re-read.
	// Default 30 seconds.
	CliqueRefreshInterval time.Duration
}

// ClaimGetter reads a ResourceClaim (a clientset in production).
type ClaimGetter interface {
	GetResourceClaim(ctx context.Context, namespace, name string) (*resourceapi.ResourceClaim, error)
}

// Deps are the driver's injected dependencies.
type Deps struct {
	// NVML must be initialized.
	NVML       nvml.Interface
	CDI        *cdi.Writer
	Checkpoint *checkpoint.Store
	// Claims may be nil: then no stale-claim cleanup runs.
	Claims  ClaimGetter
	Metrics *Metrics
	Clock   clock.WithTicker
	// Labeler may be nil: then the node label is not managed.
	Labeler CliqueLabeler
	// Fatal, if set, is called with background errors that retrying cannot
	// fix; the app cancels its run with it.
	Fatal func(error)
}

// Driver is the gpu.nvidia.com kubeletplugin.DRAPlugin.
type Driver struct {
	cfg         Config
	nvml        nvml.Interface
	cdi         *cdi.Writer
	store       *checkpoint.Store
	claims      ClaimGetter
	metrics     *Metrics
	clock       clock.WithTicker
	health      *healthMonitor
	hostDevices hostDevices
	labeler     CliqueLabeler
	fatal       func(error)

	mu        sync.Mutex
	state     checkpoint.Checkpoint
	inventory Inventory
	// crash, when set (tests), is asked at named points of prepare and
	// panics the call as a process crash would stop it.
	crash func(point string) bool

	pubMu   sync.Mutex
	publish func(context.Context, resourceslice.DriverResources) error
}

var _ kubeletplugin.DRAPlugin = &Driver{}

// NewDriver loads the checkpoint (discarding state of an earlier boot),
// discovers the node's devices, removes MIG instances and CDI specs that no
// recorded claim owns, and returns a driver ready to publish and prepare.
func NewDriver(ctx context.Context, cfg Config, deps Deps) (*Driver, error) {
	logger := klog.FromContext(ctx)
	if cfg.StaleClaimInterval <= 0 {
		cfg.StaleClaimInterval = time.Minute
	}
	if cfg.CliqueRefreshInterval <= 0 {
		cfg.CliqueRefreshInterval = 30 * time.Second
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	if deps.Metrics == nil {
		deps.Metrics = NewMetrics(nil)
	}
	d := &Driver{
		cfg: cfg, nvml: deps.NVML, cdi: deps.CDI, store: deps.Checkpoint, claims: deps.Claims,
		metrics: deps.Metrics, clock: deps.Clock, labeler: deps.Labeler, fatal: deps.Fatal,
		health: newHealthMonitor(cfg.DriverName, deps.NVML, deps.Clock, cfg.Health),
	}
	state, res, err := d.store.Load()
	if err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	if res.DiscardedBootID != "" {
		logger.Info("Discarded checkpoint of an earlier boot", "bootID", res.DiscardedBootID, "claims", res.DiscardedClaims)
		// Persist the discard so a crash now cannot resurrect the state.
		if err := d.store.Save(state); err != nil {
			return nil, fmt.Errorf("save checkpoint: %w", err)
		}
	}
	d.state = state
	if d.hostDevices, err = readHostDevices(hostroot.New(cfg.HostRoot)); err != nil {
		return nil, err
	}
	if d.inventory, err = DiscoverInventory(ctx, d.nvml, cfg.HostRoot); err != nil {
		return nil, err
	}
	if err := d.removeUnknownMigInstances(ctx); err != nil {
		return nil, err
	}
	if err := d.removeOrphanCDISpecs(ctx); err != nil {
		return nil, err
	}
	d.metrics.setDeviceStates(d.deviceStates())
	return d, nil
}

// poolName is the node's pool.
func (d *Driver) poolName() string { return d.cfg.NodeName }

// Inventory returns what the driver discovered.
func (d *Driver) Inventory() Inventory {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.inventory
}

// Resources is the pool to publish now, with health taints.
func (d *Driver) Resources() resourceslice.DriverResources {
	d.mu.Lock()
	inv := d.inventory
	d.mu.Unlock()
	gis := d.partitionGIs()
	return BuildResources(inv, PublishOptions{PoolName: d.poolName(), PartitionableMIG: d.cfg.PartitionableMIG, Taints: d.health.taints(inv, gis)})
}

// SetPublisher sets the function that publishes the pool (the kubeletplugin
// helper's PublishResources) and publishes once.
func (d *Driver) SetPublisher(ctx context.Context, publish func(context.Context, resourceslice.DriverResources) error) error {
	d.pubMu.Lock()
	d.publish = publish
	d.pubMu.Unlock()
	return d.Publish(ctx)
}

// Publish sends the current pool to the publisher, if any.
func (d *Driver) Publish(ctx context.Context) error {
	d.pubMu.Lock()
	defer d.pubMu.Unlock()
	if d.publish == nil {
		return nil
	}
	return d.publish(ctx, d.Resources())
}

// Run runs health monitoring (republishing on every change), the periodic
// stale-claim cleanup and the clique refresh until ctx ends.
func (d *Driver) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	changes, cancel := d.health.subscribe()
	defer cancel()
	go d.health.run(ctx, d.gpuUUIDs)
	t := d.clock.NewTicker(d.cfg.StaleClaimInterval)
	defer t.Stop()
	cliqueTicker := d.clock.NewTicker(d.cfg.CliqueRefreshInterval)
	defer cliqueTicker.Stop()
	// Claims deleted while the plugin was down are cleaned up now, not a
	// tick later.
	if err := d.CleanupStaleClaims(ctx); err != nil {
		logger.Error(err, "Stale claim cleanup failed")
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-changes:
			d.mu.Lock()
			d.metrics.setDeviceStates(d.deviceStates())
			d.mu.Unlock()
			if err := d.Publish(ctx); err != nil {
				logger.Error(err, "Publishing health change failed")
			}
		case <-t.C():
			if err := d.CleanupStaleClaims(ctx); err != nil {
				logger.Error(err, "Stale claim cleanup failed")
			}
		case <-cliqueTicker.C():
			if err := d.RediscoverLostGPUs(ctx); err != nil {
				logger.Error(err, "Rediscovering lost GPUs failed")
			}
			if err := d.RefreshClique(ctx); err != nil {
				logger.Error(err, "Clique refresh failed")
			}
		}
	}
}

// RediscoverLostGPUs re-reads the node when GPUs were lost at discovery and
// republishes once any of them answers again.
func (d *Driver) RediscoverLostGPUs(ctx context.Context) error {
	d.mu.Lock()
	lost := len(d.inventory.LostGPUs)
	d.mu.Unlock()
	if lost == 0 {
		return nil
	}
	inv, err := DiscoverInventory(ctx, d.nvml, d.cfg.HostRoot)
	if err != nil {
		return err
	}
	if len(inv.LostGPUs) >= lost {
		return nil
	}
	d.mu.Lock()
	d.inventory = inv
	d.metrics.setDeviceStates(d.deviceStates())
	d.mu.Unlock()
	klog.FromContext(ctx).Info("Lost GPUs are back", "gpus", len(inv.GPUs), "stillLost", len(inv.LostGPUs))
	return d.Publish(ctx)
}

func (d *Driver) gpuUUIDs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	uuids := make([]string, 0, len(d.inventory.GPUs))
	for _, g := range d.inventory.GPUs {
		uuids = append(uuids, g.UUID)
	}
	return uuids
}

// HandleError implements kubeletplugin.DRAPlugin: background errors (slice
// publishing, stale health reports) are logged; recoverable ones are retried
// by the helper. A fatal one (for example an API server that drops the
// fields our slices need: a feature gate is off) is handed to Deps.Fatal,
// which stops the plugin so that it restarts visibly instead of publishing a
// pool the scheduler misreads.
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	utilruntime.HandleErrorWithContext(ctx, err, msg)
	if errors.Is(err, kubeletplugin.ErrRecoverable) || d.fatal == nil {
		return
	}
	d.fatal(fmt.Errorf("%s: %w", msg, err))
}

// WatchHealthStatus implements kubeletplugin.DRAPlugin (KEP-4680): a report
// of every published device now, on every health change, and every 10 s.
func (d *Driver) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	changes, cancel := d.health.subscribe()
	defer cancel()
	t := d.clock.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case reports <- d.healthReport():
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changes:
		case <-t.C():
		}
	}
}

func (d *Driver) healthReport() kubeletplugin.DeviceHealthReport {
	d.mu.Lock()
	inv := d.inventory
	d.mu.Unlock()
	taints := d.health.taints(inv, d.partitionGIs())
	now := d.clock.Now()
	report := kubeletplugin.DeviceHealthReport{}
	for _, name := range publishedDeviceNames(inv, d.cfg.PartitionableMIG) {
		h := kubeletplugin.DeviceHealth{PoolName: d.poolName(), DeviceName: name, Health: kubeletplugin.HealthStatusHealthy,
			LastUpdated: now, HealthCheckTimeout: 30 * time.Second}
		var msgs []string
		for _, t := range taints[name] {
			msgs = append(msgs, fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect))
			if t.Effect != resourceapi.DeviceTaintEffectNone {
				h.Health = kubeletplugin.HealthStatusUnhealthy
			}
		}
		h.Message = strings.Join(msgs, ", ")
		report.Devices = append(report.Devices, h)
	}
	return report
}

// deviceStates counts published devices as free, prepared or unhealthy
// (unhealthy wins). Callers hold d.mu.
func (d *Driver) deviceStates() map[string]int {
	names := publishedDeviceNames(d.inventory, d.cfg.PartitionableMIG)
	unhealthy := unhealthyDevices(d.health.taints(d.inventory, d.partitionGIsLocked()))
	prepared := map[string]bool{}
	for _, cs := range d.state.Claims {
		for _, dev := range cs.Devices {
			prepared[dev.Device] = true
		}
	}
	out := map[string]int{}
	for _, name := range names {
		switch {
		case unhealthy[name]:
			out[stateUnhealthy]++
		case prepared[name]:
			out[statePrepared]++
		default:
			out[stateFree]++
		}
	}
	return out
}

// partitionGIs maps every prepared partition to the GPU instance prepare
// created for it: GPU UUID → device name → GI.
func (d *Driver) partitionGIs() map[string]map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.partitionGIsLocked()
}

func (d *Driver) partitionGIsLocked() map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, cs := range d.state.Claims {
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

func (d *Driver) deviceByUUID(uuid string) (nvml.Device, error) {
	dev, r := d.nvml.DeviceGetHandleByUUID(uuid)
	if err := nvml.ReturnError(d.nvml, "get GPU "+uuid, r); err != nil {
		return nil, err
	}
	return dev, nil
}

// removeUnknownMigInstances destroys, on every partitionable GPU, the MIG
// instances that no recorded claim created.
func (d *Driver) removeUnknownMigInstances(ctx context.Context) error {
	if !d.cfg.PartitionableMIG {
		return nil
	}
	keep := map[string]map[int]bool{}
	for _, cs := range d.state.Claims {
		for _, dev := range cs.Devices {
			var data deviceData
			if json.Unmarshal(dev.Data, &data) == nil && data.CreatedMig && data.UUID != "" {
				if keep[data.ParentUUID] == nil {
					keep[data.ParentUUID] = map[int]bool{}
				}
				keep[data.ParentUUID][data.GIID] = true
			}
		}
	}
	var errs []error
	changed := false
	for _, g := range d.inventory.GPUs {
		if !isPartitionable(g) {
			continue
		}
		parent, err := d.deviceByUUID(g.UUID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n, err := destroyUnknownMigInstances(d.nvml, parent, g.MigProfiles, keep[g.UUID])
		if err != nil {
			errs = append(errs, err)
		}
		if n > 0 {
			changed = true
			klog.FromContext(ctx).Info("Destroyed MIG instances no claim owns", "gpu", g.UUID, "count", n)
		}
	}
	if changed {
		inv, err := DiscoverInventory(ctx, d.nvml, d.cfg.HostRoot)
		if err != nil {
			return err
		}
		d.inventory = inv
	}
	return errors.Join(errs...)
}

// removeOrphanCDISpecs deletes CDI specs of claims the checkpoint does not
// know (for example after a reboot discarded the state).
func (d *Driver) removeOrphanCDISpecs(ctx context.Context) error {
	uids, err := d.cdi.ClaimUIDs()
	if err != nil {
		return err
	}
	for _, uid := range uids {
		if _, ok := d.state.Claims[uid]; ok {
			continue
		}
		klog.FromContext(ctx).Info("Removing CDI spec of an unknown claim", "claimUID", uid)
		if err := d.cdi.Delete(uid); err != nil {
			return err
		}
	}
	return nil
}
