// Copyright The computedomain-operator Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//	http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.
// Package app is the bench command line: the project's benchmarks, each a subcommand (README.md lists what each
// measures and the command make bench runs). Their reduced runs are this package's tests, in make test.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"

	controllerapp "github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-controller/app"
)

const usage = `usage: bench <benchmark> [flags]

benchmarks:
  formation   ComputeDomain formation in a simulated cluster: Job created → pods bound, domain Ready, pods Running; our components' API writes
  plot        draw bench formation --json results as a PNG
  scheduler   kube-scheduler throughput with our GPU plugin's ResourceSlices against minimal ones
  placement   Job created → all pods bound and Running, scheduler CPU, cliques: a ComputeDomain job placed by pod affinity, its gang PodGroup or the fallback; larger than a rack, in slices or by the default scheduler alone
  controller  the ComputeDomain controller's footprint (peak RSS, reconcile latency) for many domains, against envtest's API server

Run "bench <benchmark> -h" for the flags of a benchmark.
Set SIMCLUSTER_KLOG=<verbosity> to see the simulated control plane's own logs.`

const allowed = "allowed benchmarks are formation, plot, scheduler, placement, controller"

// Run runs one benchmark with its arguments. Every flag set is local, so Run can be called more than once in one
// process. A process started as the controller benchmark's child (the controller under measurement) runs the
// controller with args instead.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if isControllerChild() {
		return controllerapp.Run(ctx, args)
	}
	if len(args) == 0 {
		_, _ = fmt.Fprintln(stderr, usage)
		return errors.New("no benchmark given: " + allowed)
	}
	switch args[0] {
	case "formation":
		return runFormation(ctx, args[1:], stdout, stderr)
	case "plot":
		return runPlot(args[1:], stdout, stderr)
	case "scheduler":
		return runScheduler(ctx, args[1:], stdout, stderr)
	case "placement":
		return runPlacement(ctx, args[1:], stdout, stderr)
	case "controller":
		return runController(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		_, _ = fmt.Fprintln(stdout, usage)
		return nil
	default:
		_, _ = fmt.Fprintln(stderr, usage)
		return fmt.Errorf("unknown benchmark %q: %s", args[0], allowed)
	}
}
