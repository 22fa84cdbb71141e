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

// Package controllertest runs the ComputeDomain controller on an envtest control plane, wired as the
// binary wires it (computedomain.NewManager), for the envtest suites of the controller and of the node
// side. Tests only.
package controllertest

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain"
	"github.com/computedomain-operator/computedomain-operator/internal/testing/envtest"
)

// Workers is the test controller's number of concurrent reconciles.
const Workers = 4

// Start starts a manager running the ComputeDomain controller for operatorNamespace against env, as a
// controller process does when it starts: the logger is ctx's, the controller's metrics go to reg, no
// metrics server is bound; opts change the controller's config. stop ends the manager and returns what its
// Start returned.
func Start(ctx context.Context, env *envtest.Env, operatorNamespace string, reg prometheus.Registerer, opts ...func(*computedomain.Config)) (stop func() error, err error) {
	ctx, cancel := context.WithCancel(ctx)
	cfg := computedomain.Config{OperatorNamespace: operatorNamespace}
	for _, opt := range opts {
		opt(&cfg)
	}
	mgr, err := computedomain.NewManager(ctx, env.Config, cfg,
		computedomain.ManagerOptions{Scheme: env.Scheme, Logger: klog.FromContext(ctx), Registerer: reg, Workers: Workers})
	if err != nil {
		cancel()
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() error {
		cancel()
		return <-done
	}, nil
}
