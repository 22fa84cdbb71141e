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

package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/computedomain-operator/computedomain-operator/cmd/internal/startup"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
	"github.com/computedomain-operator/computedomain-operator/internal/fabricmanager"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/mps"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/backend"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
	"github.com/computedomain-operator/computedomain-operator/internal/usage"
	"github.com/computedomain-operator/computedomain-operator/kubeletplugin/gpu"
)

// UsageLedgerFile is the usage ledger's name in the plugin's data directory,
// next to the checkpoint.
const UsageLedgerFile = "usage.jsonl"

// Run parses args and runs the plugin until ctx ends; "inspect" as the first
// argument prints what the plugin would publish instead (no cluster needed).
// A logger in ctx (the simulated cluster's) is used as is; otherwise the
// plugin logs to stderr with the -v/--vmodule flags.
func Run(ctx context.Context, args []string) error {
	return run(ctx, args, os.LookupEnv, os.Stdout, nil)
}

// RunWithConfig is Run for callers that already hold a client config (the
// simulated cluster); a --kubeconfig flag is ignored. env replaces the
// process environment (nil: none).
func RunWithConfig(ctx context.Context, restConfig *rest.Config, args []string, env map[string]string) error {
	return run(ctx, args, startup.EnvLookup(env), os.Stdout, func(*options) (kubernetes.Interface, error) {
		return kubernetes.NewForConfig(rest.CopyConfig(restConfig))
	})
}

type clientFactory func(*options) (kubernetes.Interface, error)

func run(ctx context.Context, args []string, lookup func(string) (string, bool), out io.Writer, newClient clientFactory) error {
	o, err := parse(args, lookup)
	if err != nil {
		return err
	}
	ctx = startup.WithLogger(ctx, o.Log, "gpu-kubelet-plugin", o.NodeName)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lib, err := o.OpenNVML(ctx)
	if err != nil {
		return err
	}
	defer lib.Shutdown()

	if o.inspect {
		return inspect(ctx, o, lib, out)
	}
	if newClient == nil {
		newClient = clientFromKubeconfig
	}
	client, err := newClient(o)
	if err != nil {
		return err
	}
	return serve(ctx, o, lib, client)
}

func clientFromKubeconfig(o *options) (kubernetes.Interface, error) {
	cfg, err := startup.RestConfig(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// serve runs the plugin: driver, kubelet registration, publishing, health,
// label, metrics.
func serve(ctx context.Context, o *options, lib nvml.Interface, client kubernetes.Interface) error {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var fatalErr error
	var fatalOnce sync.Once
	stop := func(err error) {
		fatalOnce.Do(func() { fatalErr = err; cancel() })
	}
	writer, store, err := o.NodeFiles()
	if err != nil {
		return err
	}
	dopts := o.Options()
	dopts.KubeClient = client
	registry := prometheus.NewRegistry()
	if err := os.MkdirAll(dopts.PluginDataDir(), 0o750); err != nil {
		return fmt.Errorf("plugin data directory: %w", err)
	}
	// The ledger never takes the node's devices down: a file that cannot be
	// read whole is quarantined by Open, and a ledger that cannot be opened
	// at all (the file system) leaves the node serving without metering.
	var routes []draplugin.Route
	ledger, err := usage.Open(filepath.Join(dopts.PluginDataDir(), UsageLedgerFile), usage.Options{Node: o.NodeName})
	if err != nil {
		logger.Error(err, "Opening the usage ledger failed; serving without metering")
		ledger = nil
	} else {
		defer func() { _ = ledger.Close() }()
		// The ledger names namespaces and claims: it is served next to the
		// metrics on the pod's own address only (docs/metering.md).
		routes = append(routes, draplugin.Route{Path: usage.Path, Handler: usage.Handler(ledger, o.NodeName, clock.RealClock{})})
	}
	fm, err := fabricManager(o, lib)
	if err != nil {
		return err
	}
	driver, err := gpu.NewDriver(ctx, gpu.Config{
		DriverName: o.DriverName, NodeName: o.NodeName, PartitionableMIG: o.partitionableMIG, HostRoot: o.HostRoot,
		DriverRoot: o.driverRoot, DriverRootHostPath: o.driverRootHostPath,
		// The mock may run where no driver is installed (kind); real NVML
		// means a driver whose files the containers need.
		RequireDriverFiles: o.NVML.Mode == backend.ModeReal,
		Gates:              o.gates,
		Shares:             o.shares,
		UsageRetention:     o.usageRetention,
	}, gpu.Deps{
		NVML:       lib,
		CDI:        writer,
		Checkpoint: store,
		Claims:     draplugin.ClaimClient{Client: client},
		Metrics:    gpu.NewMetrics(registry),
		Labeler:    gpu.NodeLabeler{Client: client, NodeName: o.NodeName},
		Fatal:      stop,
		Usage:      ledger,
		// nil unless built with -tags crashtest (the process-kill harness).
		Crash: draplugin.ProcessCrashHook(),
		// The daemons' directories are on the host, next to the checkpoint:
		// the claims' CDI specs mount them from there.
		MPS: mps.Exec{
			Binary: o.mpsControlBinary, Root: filepath.Join(dopts.PluginDataDir(), gpu.MPSDaemonsDir),
			// The daemon finds nvidia-cuda-mps-server next to it.
			Env: []string{"PATH=" + filepath.Dir(o.mpsControlBinary) + ":" + os.Getenv("PATH")},
		},
		FabricManager: fm,
	})
	if err != nil {
		return err
	}
	helper, err := draplugin.Serve(ctx, driver, dopts, o.MetricsAddress, registry, routes...)
	if err != nil {
		return err
	}
	defer helper.Stop()
	if err := driver.SyncCliqueLabel(ctx); err != nil {
		// Retried with back-off by Run.
		logger.Error(err, "Setting the node clique label failed; retrying")
	}
	inv := driver.Inventory()
	logger.Info("GPU kubelet plugin started", "driver", o.DriverName, "gpus", len(inv.GPUs), "clique", inv.CliqueID, "partitionableMIG", o.partitionableMIG, "consumableShares", o.shares.String())
	driver.Run(ctx)
	// Later fatal errors are dropped; after this Do, reading fatalErr is safe.
	fatalOnce.Do(func() {})
	return fatalErr
}

// fabricManager returns the node's Fabric Manager for the
// FabricManagerPartitioning gate: the mock NVML profile's partition table
// (none: the node has no Fabric Manager in shared NVSwitch mode). This build
// has no client of the real Fabric Manager (libnvfm): with real NVML the gate
// is refused rather than publishing GPUs without their partitions.
func fabricManager(o *options, lib nvml.Interface) (fabricmanager.Interface, error) {
	if !o.gates.Enabled(gpu.FabricManagerPartitioning) {
		return nil, nil
	}
	m, ok := lib.(*mock.Lib)
	if !ok {
		return nil, fmt.Errorf("--feature-gates %s=true: this build has no client of the real Fabric Manager (libnvfm); the gate works with --nvml=mock only", gpu.FabricManagerPartitioning)
	}
	stateFile := ""
	if root := hostroot.New(o.HostRoot); root.IsFake() {
		stateFile = root.Path(mock.FabricManagerStateFile)
	}
	fm, err := m.Profile().FabricManager(stateFile)
	if err != nil || fm == nil {
		return nil, err
	}
	return fm, nil
}
