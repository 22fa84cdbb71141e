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

// Package app is the simcluster command line, the playground of the simulated cluster: `up`, `demo` and
// `demo-tenants`. The benchmarks are the bench command's (e2e/cmd/bench).
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
)

const usage = `usage: simcluster <command> [flags]

commands:
  up            start a simulated GPU cluster, write a kubeconfig, serve until SIGINT/SIGTERM
  demo          start a cluster, run the demo scenario, print timings and a final table
  demo-tenants  start a cluster with Kueue (bin/kueue), run the two-team story: quotas, borrowing, the sharing policy, the bill

Run "simcluster <command> -h" for the flags of a command.
The benchmarks are the bench command's (e2e/cmd/bench, its README.md lists them).
Set SIMCLUSTER_KLOG=<verbosity> to see the control plane's own logs.`

// Run runs one command with its arguments. Every flag set is local, so Run
// can be called more than once in one process.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		_, _ = fmt.Fprintln(stderr, usage)
		return errors.New("no command given: allowed commands are up, demo, demo-tenants")
	}
	switch args[0] {
	case "up":
		return runUp(ctx, args[1:], stdout, stderr)
	case "demo":
		return runDemo(ctx, args[1:], stdout, stderr)
	case "demo-tenants":
		return runDemoTenants(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		_, _ = fmt.Fprintln(stdout, usage)
		return nil
	default:
		_, _ = fmt.Fprintln(stderr, usage)
		return fmt.Errorf("unknown command %q: allowed commands are up, demo, demo-tenants", args[0])
	}
}
