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

// Command simcluster runs a simulated GPU cluster of real Kubernetes
// components: `simcluster up` serves a playground, `simcluster demo` runs the
// demo scenario and `simcluster demo-tenants` the two-team story with Kueue.
// The benchmarks are e2e/cmd/bench.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/computedomain-operator/computedomain-operator/e2e/cmd/simcluster/app"
)

func main() {
	// controller-runtime logs a few things (watch stream errors) through its process-global logger:
	// route them to klog rather than drop them behind a warning. Components log through their own.
	ctrllog.SetLogger(klog.Background())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := app.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		_, _ = fmt.Fprintf(os.Stderr, "simcluster: %v\n", err)
		os.Exit(1)
	}
}
