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
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/Masterminds/semver/v3"
	"golang.org/x/mod/modfile"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/klog/v2"
)

const (
	// ReleaseName is the Helm release of the operator in the simulated cluster.
	ReleaseName = "cdo"
	// ChartPath is the operator's chart, relative to the repository root.
	ChartPath = "charts/computedomain-operator"
	// MockMachineFile is where a simulated node's host root describes its mock
	// GPUs (profile, cluster, rack); the chart passes it to the plugins with
	// kubeletPlugin.nvml.mock.machineFile.
	MockMachineFile = "/etc/nvml-mock/machine.yaml"
)

// operatorValues are the chart values of the simulated cluster's install: the
// chart's defaults but for mock NVML read from each node's host root, and the
// parts the configuration leaves out. overrides are set last (dotted keys are
// not split: pass nested maps).
func (c *Cluster) operatorValues(overrides map[string]any) map[string]any {
	gpu := c.cfg.NodeComponents == nil
	cd := c.cfg.ComputeDomains
	values := map[string]any{
		"controller": map[string]any{"enabled": cd},
		"kubeletPlugin": map[string]any{
			"enabled": gpu || cd,
			"gpu":     map[string]any{"enabled": gpu},
			"computeDomain": map[string]any{
				"enabled": cd,
			},
			"nvml": map[string]any{
				"mode": "mock",
				"mock": map[string]any{"machineFile": MockMachineFile},
			},
		},
	}
	if c.mpsStandin != "" {
		// No NVIDIA driver on a simulated node: the stand-in runs each MPS
		// claim's control daemon, as the image's does on kind.
		plugin := values["kubeletPlugin"].(map[string]any)
		plugin["gpu"].(map[string]any)["mpsControlBinary"] = c.mpsStandin
	}
	return chartutil.CoalesceTables(deepCopyValues(overrides), values)
}

// deepCopyValues copies nested value maps, which CoalesceTables changes in
// place.
func deepCopyValues(in map[string]any) map[string]any {
	out := maps.Clone(in)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range out {
		if m, ok := v.(map[string]any); ok {
			out[k] = deepCopyValues(m)
		}
	}
	return out
}

// helmConfig is a Helm action configuration for the release namespace.
func (c *Cluster) helmConfig(ctx context.Context) (*action.Configuration, error) {
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &c.kubeconfig
	ns := OperatorNamespace
	flags.Namespace = &ns
	cfg := new(action.Configuration)
	logger := klog.FromContext(ctx).WithName("helm")
	if err := cfg.Init(flags, OperatorNamespace, "secret", func(format string, v ...any) {
		logger.V(3).Info(fmt.Sprintf(format, v...))
	}); err != nil {
		return nil, fmt.Errorf("helm: %w", err)
	}
	caps, err := capabilities(flags)
	if err != nil {
		return nil, err
	}
	cfg.Capabilities = caps
	return cfg, nil
}

// capabilities are what Helm discovers of the cluster, but for the
// Kubernetes version: the simulated API server is built without the release
// stamp (it reports v0.0.0-master), so the version is the k8s.io/kubernetes
// module's the simulator is built from, which the chart's kubeVersion checks.
func capabilities(getter genericclioptions.RESTClientGetter) (*chartutil.Capabilities, error) {
	dc, err := getter.ToDiscoveryClient()
	if err != nil {
		return nil, fmt.Errorf("helm: discovery: %w", err)
	}
	apiVersions, err := action.GetVersionSet(dc)
	if err != nil {
		return nil, fmt.Errorf("helm: API versions: %w", err)
	}
	version, err := KubernetesVersion()
	if err != nil {
		return nil, err
	}
	v, err := semver.NewVersion(version)
	if err != nil {
		return nil, fmt.Errorf("kubernetes version %q: %w", version, err)
	}
	return &chartutil.Capabilities{
		APIVersions: apiVersions,
		KubeVersion: chartutil.KubeVersion{Version: version, Major: strconv.FormatUint(v.Major(), 10), Minor: strconv.FormatUint(v.Minor(), 10)},
		HelmVersion: chartutil.DefaultCapabilities.HelmVersion,
	}, nil
}

// KubernetesVersion is the version of k8s.io/kubernetes the simulated
// cluster's components are built from (v1.37.2): the binary's build
// information, else (test binaries carry no dependency list) e2e/go.mod.
func KubernetesVersion() (string, error) {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == kubernetesModule {
				return dep.Version, nil
			}
		}
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(root, "e2e/go.mod")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("kubernetes version: %w", err)
	}
	mod, err := modfile.ParseLax(path, data, nil)
	if err != nil {
		return "", fmt.Errorf("kubernetes version: %w", err)
	}
	for _, req := range mod.Require {
		if req.Mod.Path == kubernetesModule {
			return req.Mod.Version, nil
		}
	}
	return "", fmt.Errorf("kubernetes version: %s does not require %s", path, kubernetesModule)
}

const kubernetesModule = "k8s.io/kubernetes"

// chartAndConfig loads the chart from the repository and a Helm action configuration for the release.
func (c *Cluster) chartAndConfig(ctx context.Context) (*chart.Chart, *action.Configuration, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, nil, err
	}
	ch, err := loader.Load(filepath.Join(root, ChartPath))
	if err != nil {
		return nil, nil, fmt.Errorf("load chart %s: %w", ChartPath, err)
	}
	cfg, err := c.helmConfig(ctx)
	return ch, cfg, err
}

// installOperator installs the chart as a user would (`helm install cdo
// charts/computedomain-operator -n computedomain-operator --create-namespace`),
// with Config.ChartValues over the simulated cluster's values. It does not wait:
// the cluster's start waits for the plugins' ResourceSlices.
func (c *Cluster) installOperator(ctx context.Context) error {
	ch, cfg, err := c.chartAndConfig(ctx)
	if err != nil {
		return err
	}
	install := action.NewInstall(cfg)
	install.ReleaseName = ReleaseName
	install.Namespace = OperatorNamespace
	install.CreateNamespace = true
	install.Timeout = 2 * time.Minute
	if _, err := install.RunWithContext(ctx, ch, c.operatorValues(c.cfg.ChartValues)); err != nil {
		return fmt.Errorf("helm install %s %s: %w", ReleaseName, ChartPath, err)
	}
	return nil
}

// UpgradeOperator runs `helm upgrade` of the operator's release with values
// over the install's (e.g. {"image": {"tag": "v2"}}); like `helm upgrade
// --reuse-values`, values of the install stay unless overridden. It returns
// once the release's Deployments and kubelet plugin DaemonSet have rolled
// out, as `kubectl rollout status` says: every plugin pod of the new
// template ready, which is once the node's kubelet has registered it (its
// readiness probe). Helm's own --wait does not cover that on a small
// cluster: it counts a DaemonSet ready with maxUnavailable pods not ready,
// all of them on one node. A pod whose claims the node prepares before
// the kubelet registered the new plugin fails and waits for the pod resync,
// 60-90 s.
func (c *Cluster) UpgradeOperator(ctx context.Context, values map[string]any) error {
	ch, cfg, err := c.chartAndConfig(ctx)
	if err != nil {
		return err
	}
	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = OperatorNamespace
	upgrade.ReuseValues = true
	upgrade.Timeout = 2 * time.Minute
	if _, err := upgrade.RunWithContext(ctx, ReleaseName, ch, deepCopyValues(values)); err != nil {
		return fmt.Errorf("helm upgrade %s: %w", ReleaseName, err)
	}
	return WaitForRollout(ctx, c.client, OperatorNamespace, "app.kubernetes.io/instance="+ReleaseName, upgrade.Timeout)
}
