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
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/cmd/internal/startup"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	"github.com/computedomain-operator/computedomain-operator/kubeletplugin/computedomain"
)

// Run parses args and runs the plugin until ctx ends. A logger in ctx (the
// simulated cluster's) is used as is; otherwise the plugin logs to stderr
// with the -v/--vmodule flags.
func Run(ctx context.Context, args []string) error {
	return run(ctx, args, os.LookupEnv, nil)
}

// RunWithConfig is Run for callers that already hold a client config (the
// simulated cluster); a --kubeconfig flag is ignored. env replaces the
// process environment (nil: none).
func RunWithConfig(ctx context.Context, restConfig *rest.Config, args []string, env map[string]string) error {
	return run(ctx, args, startup.EnvLookup(env), func(*options) (*cluster, error) { return clusterFromConfig(rest.CopyConfig(restConfig)) })
}

// cluster is the plugin's view of the API: a clientset for the kubelet
// helper and the stale-claim cleanup, and the ComputeDomains from local
// caches.
type cluster struct {
	kube    kubernetes.Interface
	domains computedomain.DomainLookup
	// start starts what keeps the domain caches.
	start func(ctx context.Context) error
}

type clusterFactory func(*options) (*cluster, error)

func run(ctx context.Context, args []string, lookup func(string) (string, bool), newCluster clusterFactory) error {
	o, err := parse(args, lookup)
	if err != nil {
		return err
	}
	ctx = startup.WithLogger(ctx, o.Log, "compute-domain-kubelet-plugin", o.NodeName)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	lib, err := o.OpenNVML(ctx)
	if err != nil {
		return err
	}
	clique, err := nvml.NodeCliqueID(lib)
	lib.Shutdown()
	if err != nil {
		// A fabric still registering or GPUs that disagree: publishing a
		// wrong clique would hand out channels across racks.
		return fmt.Errorf("read the node's NVLink clique: %w", err)
	}
	if newCluster == nil {
		newCluster = clusterFromKubeconfig
	}
	c, err := newCluster(o)
	if err != nil {
		return err
	}
	return serve(ctx, o, clique, c)
}

func clusterFromKubeconfig(o *options) (*cluster, error) {
	cfg, err := startup.RestConfig(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	return clusterFromConfig(cfg)
}

// clusterFromConfig builds the clientset and the ComputeDomain lookup: the
// domains of a namespace are watched while the node prepares claims there.
func clusterFromConfig(cfg *rest.Config) (*cluster, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	scheme, err := kubescheme.New()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("ComputeDomain client: %w", err)
	}
	domains := computedomain.NewWatchedDomains(c, computedomain.DomainWatchGrace, clock.RealClock{})
	start := func(ctx context.Context) error {
		go domains.Run(ctx)
		return nil
	}
	return &cluster{kube: kube, domains: domains, start: start}, nil
}

func serve(ctx context.Context, o *options, clique string, c *cluster) error {
	logger := klog.FromContext(ctx)
	writer, store, err := o.NodeFiles()
	if err != nil {
		return err
	}
	dopts := o.Options()
	dopts.KubeClient = c.kube
	// A channel claim waits inside its prepare call for its node's place in
	// the domain; the driver's state is safe for concurrent calls, so that
	// wait holds up no other claim of the node.
	dopts.Concurrent = true
	registry := prometheus.NewRegistry()
	driver, err := computedomain.NewDriver(ctx, computedomain.Config{
		DriverName: o.DriverName, NodeName: o.NodeName, CliqueID: clique,
		ChannelSlots: o.channelSlots, DaemonSlots: o.daemonSlots, ReadyWait: o.readyWait, OperatorNamespace: o.operatorNS,
		HostRoot: o.Root(), DomainConfigRoot: filepath.Join(dopts.PluginDataDir(), "domains"),
	}, computedomain.Deps{
		CDI:        writer,
		Checkpoint: store,
		Domains:    c.domains,
		Claims:     draplugin.ClaimClient{Client: c.kube},
		Metrics:    computedomain.NewMetrics(registry),
		// nil unless built with -tags crashtest (the process-kill harness).
		Crash: draplugin.ProcessCrashHook(),
	})
	if err != nil {
		return err
	}
	if err := c.start(ctx); err != nil {
		return err
	}

	helper, err := draplugin.Serve(ctx, driver, dopts, o.MetricsAddress, registry)
	if err != nil {
		return err
	}
	defer helper.Stop()
	logger.Info("compute-domain kubelet plugin started", "driver", o.DriverName, "clique", clique, "channelSlots", o.channelSlots, "daemonSlots", o.daemonSlots)
	driver.Run(ctx)
	return nil
}
