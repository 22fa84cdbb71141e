package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/backend"
	"github.com/computedomain-operator/computedomain-operator/kubeletplugin/gpu"
)

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
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	return run(ctx, args, lookup, os.Stdout, func(*options) (kubernetes.Interface, error) {
		return kubernetes.NewForConfig(rest.CopyConfig(restConfig))
	})
}

type clientFactory func(*options) (kubernetes.Interface, error)

func run(ctx context.Context, args []string, lookup func(string) (string, bool), out io.Writer, newClient clientFactory) error {
	o, err := parse(args, lookup)
	if err != nil {
		return err
	}
	logger, err := logr.FromContext(ctx)
	if err != nil {
		logger = textlogger.NewLogger(o.logConfig)
	}
	logger = logger.WithName("gpu-kubelet-plugin").WithValues("node", o.nodeName)
	ctx = klog.NewContext(ctx, logger)

	root := hostroot.New(o.hostRoot)
	o.nvml.HostRoot = root
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lib, err := backend.Open(ctx, o.nvml)
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
	return serve(ctx, o, lib, root, client)
}

func clientFromKubeconfig(o *options) (kubernetes.Interface, error) {
	var cfg *rest.Config
	var err error
	if o.kubeconfig == "" {
		cfg, err = rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig is empty and the in-cluster config is unavailable: %w", err)
		}
	} else if cfg, err = clientcmd.BuildConfigFromFlags("", o.kubeconfig); err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", o.kubeconfig, err)
	}
	return kubernetes.NewForConfig(cfg)
}

// serve runs the plugin: driver, kubelet registration, publishing, health,
// label, metrics.
func serve(ctx context.Context, o *options, lib nvml.Interface, root hostroot.Root, client kubernetes.Interface) error {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var fatalErr error
	var fatalOnce sync.Once
	stop := func(err error) {
		fatalOnce.Do(func() { fatalErr = err; cancel() })
	}
	bootID, err := root.BootID()
	if err != nil {
		return fmt.Errorf("--host-root %s: %w", o.hostRoot, err)
	}
	writer, err := cdi.NewWriter(o.cdiRoot, o.driverName)
	if err != nil {
		return fmt.Errorf("--cdi-root: %w", err)
	}
	dopts := o.drapluginOptions()
	dopts.KubeClient = client
	registry := prometheus.NewRegistry()
	driver, err := gpu.NewDriver(ctx, gpu.Config{
		DriverName: o.driverName, NodeName: o.nodeName, PartitionableMIG: o.partitionableMIG, HostRoot: o.hostRoot,
	}, gpu.Deps{
		NVML:       lib,
		CDI:        writer,
		Checkpoint: checkpoint.NewStore(filepath.Join(dopts.PluginDataDir(), "checkpoint.json"), bootID),
		Claims:     draplugin.ClaimClient{Client: client},
		Metrics:    gpu.NewMetrics(registry),
		Labeler:    gpu.NodeLabeler{Client: client, NodeName: o.nodeName},
		Fatal:      stop,
	})
	if err != nil {
		return err
	}
	if o.metricsAddress != "" {
		addr, err := draplugin.ServeMetrics(ctx, o.metricsAddress, registry)
		if err != nil {
			return fmt.Errorf("--metrics-address: %w", err)
		}
		logger.Info("Serving metrics", "address", addr.String())
	}
	helper, err := draplugin.Start(ctx, driver, dopts)
	if err != nil {
		return err
	}
	defer helper.Stop()
	if err := driver.SetPublisher(ctx, helper.PublishResources); err != nil {
		return fmt.Errorf("publish resources: %w", err)
	}
	if err := driver.SyncCliqueLabel(ctx); err != nil {
		// Retried by the clique refresh in Run.
		logger.Error(err, "Setting the node clique label failed")
	}
	inv := driver.Inventory()
	logger.Info("GPU kubelet plugin started", "driver", o.driverName, "gpus", len(inv.GPUs), "clique", inv.CliqueID, "partitionableMIG", o.partitionableMIG)
	driver.Run(ctx)
	// Later fatal errors are dropped; after this Do, reading fatalErr is safe.
	fatalOnce.Do(func() {})
	return fatalErr
}
