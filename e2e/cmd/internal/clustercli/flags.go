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

// Package clustercli is what the simcluster and bench commands share: the flags of a simulated cluster, its
// quiet stop, a summary of its nodes and a CPU profile of the process.
package clustercli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"
)

// Flags are the flags of a simulated cluster that the commands of simcluster and bench share.
type Flags struct {
	Profile        string
	Racks          int
	NodesPerRack   int
	Extra          string
	WorkloadAPI    bool
	composite      bool
	ComputeDomains bool
	resourceBetas  bool
	dir            string
	gracePeriod    time.Duration
	runDuration    time.Duration
	verbosity      int
	startParallel  int
	draDriver      string
}

// Register registers the flags on fs, with the command's default topology.
func (f *Flags) Register(fs *flag.FlagSet, racks, nodesPerRack int, extra string) {
	fs.StringVar(&f.Profile, "profile", "gb200-nvl72", "GPU profile of the rack nodes: "+strings.Join(topology.ProfileNames(), ", "))
	fs.IntVar(&f.Racks, "racks", racks, "number of racks (one NVLink clique each)")
	fs.IntVar(&f.NodesPerRack, "nodes-per-rack", nodesPerRack, "nodes per rack (at most 18 for NVL72)")
	fs.StringVar(&f.Extra, "extra", extra, "extra nodes outside the racks, <profile>:<count>[,...]")
	fs.BoolVar(&f.resourceBetas, "resource-beta-apis", true, "also serve "+strings.Join(simcluster.ResourceBetaVersions, " and ")+", as clusters that enable them do, so older manifests apply")
	fs.BoolVar(&f.WorkloadAPI, "workload-api", true, "turn on the gates "+strings.Join(simcluster.WorkloadGates, ", ")+" and scheduling.k8s.io/v1beta1 and v1alpha3")
	fs.BoolVar(&f.composite, "composite-pod-groups", true, "with --workload-api, also the gate CompositePodGroup (scheduling.k8s.io/v1alpha3); false: the ComputeDomain controller releases a domain larger than a clique slice by slice itself, as on a cluster without it")
	fs.StringVar(&f.dir, "dir", "", "directory for etcd data and node host roots (default: a temporary directory, removed on exit)")
	fs.DurationVar(&f.gracePeriod, "node-monitor-grace-period", 20*time.Second, "node lifecycle controller grace period before a silent node becomes NotReady")
	fs.DurationVar(&f.runDuration, "job-run-duration", 5*time.Second, "how long containers of pods that do not restart (Job pods) run before exiting 0")
	fs.IntVar(&f.verbosity, "v", 0, "log verbosity of the command itself")
	fs.IntVar(&f.startParallel, "start-parallelism", 8, "nodes started at once")
	fs.BoolVar(&f.ComputeDomains, "compute-domains", true, "turn on ComputeDomains in the operator's chart: the controller, the compute-domain kubelet plugin on every node, and the IMEX daemon pods")
	fs.StringVar(&f.draDriver, "dra-driver", "gpu-plugin", "DRA driver on every node: gpu-plugin (the project's GPU kubelet plugin from the chart's DaemonSet, mock NVML) or test-driver (a minimal driver of the e2e module instead)")
}

// Config is the simulated cluster the flags describe.
func (f *Flags) Config() (simcluster.Config, error) {
	extra, err := topology.ParseNodePools(f.Extra)
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
	var gates map[string]bool
	if !f.composite {
		gates = map[string]bool{"CompositePodGroup": false}
	}
	return simcluster.Config{
		FeatureGates:            gates,
		NodeComponents:          components,
		ComputeDomains:          f.ComputeDomains,
		Topology:                topology.Topology{Profile: f.Profile, Racks: f.Racks, NodesPerRack: f.NodesPerRack, Extra: extra},
		DisableWorkloadAPI:      !f.WorkloadAPI,
		DisableResourceBetaAPIs: !f.resourceBetas,
		Dir:                     f.dir,
		NodeMonitorGracePeriod:  f.gracePeriod,
		RunDuration:             f.runDuration,
		StartParallelism:        f.startParallel,
	}, nil
}

// Logger is the command's logger at the flags' verbosity.
func (f *Flags) Logger(stderr io.Writer) logr.Logger { return NewLogger(f.verbosity, stderr) }

// NewLogger is a command's text logger at verbosity, writing to w.
func NewLogger(verbosity int, w io.Writer) logr.Logger {
	return textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(verbosity), textlogger.Output(w)))
}

// WithLogger returns ctx with logger.
func WithLogger(ctx context.Context, logger logr.Logger) context.Context {
	return klog.NewContext(ctx, logger)
}
