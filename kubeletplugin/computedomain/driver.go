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
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/clock"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
)

// DefaultDriverName is the compatible driver name.
const DefaultDriverName = apiv1beta1.ComputeDomainDriverName

// Defaults of Config.
const (
	// DefaultReadyWait is how long one prepare of a channel claim waits,
	// inside the call, for its node's place in the domain before it answers
	// with a retryable error. The kubelet retries a failed prepare only at
	// its next pod sync (60-90 s later), so the wait covers a healthy
	// domain's formation (the controller writes the status at most every
	// 500 ms); it stays well below the kubelet's 45 s call timeout.
	DefaultReadyWait = 30 * time.Second
	// MaxReadyWait is the longest ReadyWait: 10 s below the kubelet's 45 s
	// call timeout, room for the helper's claim reads and the checkpoint and
	// CDI writes.
	MaxReadyWait = 35 * time.Second
	// DefaultCleanupInterval is how often claims whose ResourceClaim is gone
	// are unprepared.
	DefaultCleanupInterval = time.Minute
)

// Config is the plugin's static configuration.
type Config struct {
	DriverName string
	NodeName   string
	// CliqueID is the node's NVLink clique; empty without a multi-node fabric.
	CliqueID     string
	ChannelSlots int
	DaemonSlots  int
	// HostRoot is where the host's /dev and /proc are visible (on a mock-NVML
	// node, a root that stands in for the driver's character devices:
	// hostroot.Root.WithMockDriver).
	HostRoot hostroot.Root
	// OperatorNamespace is where the operator's IMEX daemon pods run: the only
	// namespace whose daemon claims this plugin prepares.
	OperatorNamespace string
	// DomainConfigRoot is the host directory under which each domain's
	// daemon gets its IMEX config directory (<root>/<domain UID>).
	DomainConfigRoot string
	// ReadyWait is how long one prepare of a channel claim waits for its
	// node's place in the domain (DefaultReadyWait).
	ReadyWait       time.Duration
	CleanupInterval time.Duration
}

// Deps are the driver's injected dependencies.
type Deps struct {
	CDI        *cdi.Writer
	Checkpoint *checkpoint.Store
	Domains    DomainLookup
	// Claims may be nil: then no stale-claim cleanup runs.
	Claims draplugin.ClaimGetter
	Clock  clock.WithTicker
	// Metrics may be nil: then nothing is registered.
	Metrics *Metrics
	// Crash is the crash tests' hook, asked at the named crash points of
	// prepare and unprepare; nil in production.
	Crash draplugin.CrashHook
}

// Driver is the compute-domain.nvidia.com kubeletplugin.DRAPlugin: a thin
// adapter from the kubelet helper's calls to the node's state (state.go),
// which prepares and unprepares, plus publishing the pool and the stale-claim
// sweep.
type Driver struct {
	cfg    Config
	claims draplugin.ClaimGetter
	clock  clock.WithTicker
	pub    draplugin.Publisher
	state  *nodeState
}

var _ kubeletplugin.DRAPlugin = &Driver{}

// NewDriver checks the configuration and loads the checkpoint (discarding
// state of an earlier boot).
func NewDriver(ctx context.Context, cfg Config, deps Deps) (*Driver, error) {
	if cfg.DriverName == "" {
		cfg.DriverName = DefaultDriverName
	}
	if cfg.ChannelSlots == 0 {
		cfg.ChannelSlots = DefaultChannelSlots
	}
	if cfg.DaemonSlots == 0 {
		cfg.DaemonSlots = DefaultDaemonSlots
	}
	if cfg.ReadyWait == 0 {
		cfg.ReadyWait = DefaultReadyWait
	}
	if cfg.CleanupInterval <= 0 {
		cfg.CleanupInterval = DefaultCleanupInterval
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	if deps.Metrics == nil {
		deps.Metrics = NewMetrics(nil)
	}
	var errs []error
	if cfg.NodeName == "" {
		errs = append(errs, errors.New("node name must not be empty"))
	}
	if cfg.ChannelSlots < 1 || cfg.DaemonSlots < 1 || cfg.ChannelSlots+cfg.DaemonSlots > MaxSlots {
		errs = append(errs, fmt.Errorf("channel slots %d and daemon slots %d: each at least 1, together at most %d", cfg.ChannelSlots, cfg.DaemonSlots, MaxSlots))
	}
	if cfg.ReadyWait < 0 || cfg.ReadyWait > MaxReadyWait {
		errs = append(errs, fmt.Errorf("ready wait %s: must be 0..%s (kubelet's prepare timeout is 45s)", cfg.ReadyWait, MaxReadyWait))
	}
	if cfg.OperatorNamespace == "" {
		errs = append(errs, errors.New("operator namespace must not be empty: daemon claims are accepted from it alone"))
	}
	if !filepath.IsAbs(cfg.DomainConfigRoot) {
		errs = append(errs, fmt.Errorf("domain config root %q must be an absolute path", cfg.DomainConfigRoot))
	}
	if deps.CDI == nil || deps.Checkpoint == nil || deps.Domains == nil {
		errs = append(errs, errors.New("CDI writer, checkpoint store and domain lookup must all be set"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("compute-domain plugin: %w", err)
	}
	state, err := newNodeState(ctx, cfg, deps)
	if err != nil {
		return nil, err
	}
	return &Driver{cfg: cfg, claims: deps.Claims, clock: deps.Clock, state: state}, nil
}

// Resources is the pool to publish.
func (d *Driver) Resources() resourceslice.DriverResources {
	return BuildResources(d.cfg.NodeName, d.cfg.DriverName, d.cfg.CliqueID, d.cfg.ChannelSlots, d.cfg.DaemonSlots)
}

// SetPublisher sets the function that publishes the pool (the kubeletplugin
// helper's PublishResources) and publishes once.
func (d *Driver) SetPublisher(ctx context.Context, publish func(context.Context, resourceslice.DriverResources) error) error {
	return d.pub.Set(ctx, publish, d.Resources)
}

// Run unprepares claims whose ResourceClaim is gone, at once and then every
// CleanupInterval, until ctx ends.
func (d *Driver) Run(ctx context.Context) {
	draplugin.SweepStaleClaims(ctx, d.clock, d.cfg.CleanupInterval, d.CleanupStaleClaims)
}

// PrepareResourceClaims implements kubeletplugin.DRAPlugin: each claim is
// prepared by the state (nodeState.Prepare), the claims of one call side by
// side, so that a pod whose claims wait for two domains waits once. The
// state is safe for concurrent calls: the helper runs this plugin with
// Concurrent (kubeletplugin.Serialize(false)), so a claim waiting for its
// domain never holds up another pod's prepare or unprepare on the node.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	if len(claims) == 1 {
		out[claims[0].UID] = d.state.Prepare(ctx, claims[0])
		return out, nil
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, claim := range claims {
		wg.Go(func() {
			res := d.state.Prepare(ctx, claim)
			mu.Lock()
			defer mu.Unlock()
			out[claim.UID] = res
		})
	}
	wg.Wait()
	return out, nil
}

// UnprepareResourceClaims implements kubeletplugin.DRAPlugin
// (nodeState.Unprepare).
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	uids := make([]types.UID, 0, len(claims))
	for _, c := range claims {
		uids = append(uids, c.UID)
	}
	return d.state.Unprepare(ctx, uids), nil
}

// CleanupStaleClaims unprepares claims whose ResourceClaim is gone
// (nodeState.UnprepareStale).
func (d *Driver) CleanupStaleClaims(ctx context.Context) error {
	return d.state.UnprepareStale(ctx, d.claims)
}

// HandleError implements kubeletplugin.DRAPlugin: background errors are
// logged; the helper retries them.
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	draplugin.HandleBackgroundError(ctx, err, msg, nil)
}

// WatchHealthStatus implements kubeletplugin.DRAPlugin: channel and daemon
// slots have no health of their own.
func (d *Driver) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}
