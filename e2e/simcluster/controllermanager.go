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

package simcluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/component-base/configz"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
)

// Controllers are the kube-controller-manager controllers a GPU cluster needs.
var Controllers = []string{
	"resourceclaim-controller",
	"device-taint-eviction-controller",
	"daemonset-controller",
	"deployment-controller",
	"replicaset-controller",
	"job-controller",
	"ttl-after-finished-controller",
	"garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-controller",
	"node-lifecycle-controller",
	"taint-eviction-controller",
	"podgroup-protection-controller",
}

func controllerManagerFlags(kubeconfig string, nodeMonitorGracePeriod time.Duration) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
		"--controllers=" + strings.Join(Controllers, ","),
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
		"--node-monitor-period=1s",
		"--node-monitor-grace-period=" + nodeMonitorGracePeriod.String(),
		"--concurrent-job-syncs=10",
	}
}

// startControllerManager runs the real kube-controller-manager with the
// controllers in Controllers until ctx ends.
func startControllerManager(ctx context.Context, kubeconfig string, nodeMonitorGracePeriod time.Duration) (*runningComponent, error) {
	return runControllerManager(ctx, controllerManagerFlags(kubeconfig, nodeMonitorGracePeriod))
}

// runControllerManager runs the real kube-controller-manager with flags until ctx ends; a canceled ctx is a
// clean stop.
func runControllerManager(ctx context.Context, flags []string) (*runningComponent, error) {
	s, err := options.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager options: %w", err)
	}
	s.ComponentGlobalsRegistry = newComponentGlobals()
	all, disabled, aliases := app.KnownControllers(), app.ControllersDisabledByDefault(), app.ControllerAliases()
	named := s.Flags(all, disabled, aliases)
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, f := range named.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(flags); err != nil {
		return nil, fmt.Errorf("kube-controller-manager flags: %w", err)
	}
	s.ParsedFlags = &named
	if err := s.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, fmt.Errorf("kube-controller-manager feature gates: %w", err)
	}
	config, err := s.Config(ctx, all, disabled, aliases)
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager config: %w", err)
	}
	return runComponent("kube-controller-manager", func() error {
		defer configz.Delete(app.ConfigzName)
		err := app.Run(ctx, config.Complete())
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}), nil
}
