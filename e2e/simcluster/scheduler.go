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
	"fmt"
	"runtime/pprof"

	"github.com/spf13/pflag"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/configz"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// schedulerFlags run the real kube-scheduler without serving or leader
// election, against the control plane's kubeconfig.
func schedulerFlags(kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
	}
}

// ComponentLabel is the pprof label key on the goroutines of a simulated control-plane component, and
// SchedulerLabel its value on the kube-scheduler's: a CPU profile of the process then tells the
// scheduler's CPU time from the rest of the cluster's (every goroutine it starts inherits the label).
// The operator's binaries that the nodes run carry their binary's name (ControllerComponent, ...).
const (
	ComponentLabel = "simcluster.component"
	SchedulerLabel = "kube-scheduler"
)

// startScheduler runs kube-scheduler (default profile; its plugins follow the
// process-global feature gates set by the apiserver) until ctx ends, its
// goroutines labeled SchedulerLabel.
func startScheduler(ctx context.Context, kubeconfig string) (sched *runningComponent, err error) {
	pprof.Do(ctx, pprof.Labels(ComponentLabel, SchedulerLabel), func(ctx context.Context) {
		sched, err = setUpScheduler(ctx, kubeconfig)
	})
	return sched, err
}

func setUpScheduler(ctx context.Context, kubeconfig string) (*runningComponent, error) {
	opts := options.NewOptionsWithComponentGlobalsRegistry(newComponentGlobals())
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(schedulerFlags(kubeconfig)); err != nil {
		return nil, fmt.Errorf("kube-scheduler flags: %w", err)
	}
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, fmt.Errorf("kube-scheduler feature gates: %w", err)
	}
	cc, sched, err := app.Setup(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("set up kube-scheduler: %w", err)
	}
	return runComponent("kube-scheduler", func() error {
		defer configz.Delete("componentconfig")
		return app.Run(ctx, cc, sched)
	}), nil
}

// newComponentGlobals is a private registry seeded from the process-global
// feature gate (which the apiserver has set), so components do not contend
// for the default registry.
func newComponentGlobals() basecompatibility.ComponentGlobalsRegistry {
	featureGate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	effectiveVersion := utilcompatibility.DefaultKubeEffectiveVersionForTest()
	effectiveVersion.SetEmulationVersion(featureGate.EmulationVersion())
	effectiveVersion.SetMinCompatibilityVersion(featureGate.MinCompatibilityVersion())
	registry := basecompatibility.NewComponentGlobalsRegistry()
	// Registering a fresh registry cannot collide.
	_ = registry.Register(basecompatibility.DefaultKubeComponent, effectiveVersion, featureGate)
	return registry
}
