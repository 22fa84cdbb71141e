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

// Package app is the simcluster command line: `up` and `demo`.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
)

const usage = `usage: simcluster <command> [flags]

commands:
  up     start a simulated GPU cluster, write a kubeconfig, serve until SIGINT/SIGTERM
  demo   start a cluster, run the demo scenario, print timings and a final table
  demo-tenants  start a cluster with Kueue (bin/kueue), run the two-team story: quotas, borrowing, the sharing policy, the bill
  bench-formation  time ComputeDomain formation and count our components' API writes
  bench-plot       draw bench-formation --json results as a PNG
  bench-scheduler  kube-scheduler throughput with our GPU plugin's ResourceSlices against minimal ones
  bench-placement  Job created → all pods bound: a ComputeDomain job placed by pod affinity and by its gang PodGroup

Run "simcluster <command> -h" for the flags of a command.
Set SIMCLUSTER_KLOG=<verbosity> to see the control plane's own logs.`

// Run runs one command with its arguments. Every flag set is local, so Run
// can be called more than once in one process.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		_, _ = fmt.Fprintln(stderr, usage)
		return errors.New("no command given: allowed commands are up, demo, demo-tenants, bench-formation, bench-scheduler, bench-placement, bench-plot")
	}
	switch args[0] {
	case "up":
		return runUp(ctx, args[1:], stdout, stderr)
	case "demo":
		return runDemo(ctx, args[1:], stdout, stderr)
	case "demo-tenants":
		return runDemoTenants(ctx, args[1:], stdout, stderr)
	case "bench-formation":
		return runBenchFormation(ctx, args[1:], stdout, stderr)
	case "bench-plot":
		return runBenchPlot(args[1:], stdout, stderr)
	case "bench-scheduler":
		return runBenchScheduler(ctx, args[1:], stdout, stderr)
	case "bench-placement":
		return runBenchPlacement(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		_, _ = fmt.Fprintln(stdout, usage)
		return nil
	default:
		_, _ = fmt.Fprintln(stderr, usage)
		return fmt.Errorf("unknown command %q: allowed commands are up, demo, demo-tenants, bench-formation, bench-scheduler, bench-placement, bench-plot", args[0])
	}
}

// clusterFlags are the flags every command shares.
type clusterFlags struct {
	profile       string
	racks         int
	nodesPerRack  int
	extra         string
	workloadAPI   bool
	resourceBetas bool
	dir           string
	gracePeriod   time.Duration
	runDuration   time.Duration
	verbosity     int
	startParallel int
	draDriver     string
	cds           bool
}

func (f *clusterFlags) register(fs *flag.FlagSet, racks, nodesPerRack int, extra string) {
	fs.StringVar(&f.profile, "profile", "gb200-nvl72", "GPU profile of the rack nodes: "+strings.Join(topology.ProfileNames(), ", "))
	fs.IntVar(&f.racks, "racks", racks, "number of racks (one NVLink clique each)")
	fs.IntVar(&f.nodesPerRack, "nodes-per-rack", nodesPerRack, "nodes per rack (at most 18 for NVL72)")
	fs.StringVar(&f.extra, "extra", extra, "extra nodes outside the racks, <profile>:<count>[,...]")
	fs.BoolVar(&f.resourceBetas, "resource-beta-apis", true, "also serve "+strings.Join(simcluster.ResourceBetaVersions, " and ")+", as clusters that enable them do, so older manifests apply")
	fs.BoolVar(&f.workloadAPI, "workload-api", true, "turn on the gates "+strings.Join(simcluster.WorkloadGates, ", ")+" and scheduling.k8s.io/v1beta1")
	fs.StringVar(&f.dir, "dir", "", "directory for etcd data and node host roots (default: a temporary directory, removed on exit)")
	fs.DurationVar(&f.gracePeriod, "node-monitor-grace-period", 20*time.Second, "node lifecycle controller grace period before a silent node becomes NotReady")
	fs.DurationVar(&f.runDuration, "job-run-duration", 5*time.Second, "how long containers of pods that do not restart (Job pods) run before exiting 0")
	fs.IntVar(&f.verbosity, "v", 0, "log verbosity of simcluster itself")
	fs.IntVar(&f.startParallel, "start-parallelism", 8, "nodes started at once")
	fs.BoolVar(&f.cds, "compute-domains", true, "turn on ComputeDomains in the operator's chart: the controller, the compute-domain kubelet plugin on every node, and the IMEX daemon pods")
	fs.StringVar(&f.draDriver, "dra-driver", "gpu-plugin", "DRA driver on every node: gpu-plugin (the project's GPU kubelet plugin from the chart's DaemonSet, mock NVML) or test-driver (a minimal driver of the e2e module instead)")
}

func (f *clusterFlags) config() (simcluster.Config, error) {
	extra, err := topology.ParseNodePools(f.extra)
	if err != nil {
		return simcluster.Config{}, err
	}
	var components []simcluster.NodeComponent
	switch f.draDriver {
	case "gpu-plugin":
		// The chart's kubelet-plugin DaemonSet runs it.
	case "test-driver":
		components = []simcluster.NodeComponent{simcluster.TestDriverComponent()}
	default:
		return simcluster.Config{}, fmt.Errorf("--dra-driver %q: allowed values are gpu-plugin, test-driver", f.draDriver)
	}
	return simcluster.Config{
		NodeComponents:          components,
		ComputeDomains:          f.cds,
		Topology:                topology.Topology{Profile: f.profile, Racks: f.racks, NodesPerRack: f.nodesPerRack, Extra: extra},
		DisableWorkloadAPI:      !f.workloadAPI,
		DisableResourceBetaAPIs: !f.resourceBetas,
		Dir:                     f.dir,
		NodeMonitorGracePeriod:  f.gracePeriod,
		RunDuration:             f.runDuration,
		StartParallelism:        f.startParallel,
	}, nil
}

func (f *clusterFlags) logger(stderr io.Writer) logr.Logger {
	return textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(f.verbosity), textlogger.Output(stderr)))
}

func withLogger(ctx context.Context, logger logr.Logger) context.Context {
	return klog.NewContext(ctx, logger)
}
