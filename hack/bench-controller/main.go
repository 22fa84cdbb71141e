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

// Command bench-controller measures the ComputeDomain controller's footprint: it starts envtest's
// kube-apiserver and etcd (bin/, `make testbins`), runs the real controller (cmd/compute-domain-controller)
// as a child process of its own, writes lightweight objects (Node objects, ComputeDomains, and for each
// domain workload claims allocated on its nodes, as the scheduler would leave them) and reports the
// controller's peak RSS (VmHWM) and the p50/p99 of its reconciles from its own metrics endpoint.
//
//	go run ./hack/bench-controller --domains 1000 --nodes 2000
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-controller/app"
)

func main() {
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-controller:", err)
		os.Exit(1)
	}
}

func mainErr() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if isControllerChild() {
		return app.Run(ctx, os.Args[1:])
	}
	return run(ctx, os.Args[1:], os.Stdout, os.Stderr)
}
