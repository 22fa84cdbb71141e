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
	"strconv"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"

	gpuapp "github.com/computedomain-operator/computedomain-operator/cmd/gpu-kubelet-plugin/app"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
)

// GPUPluginComponent runs the project's GPU kubelet plugin in-process on each
// node, through its Run entry point with the flags its DaemonSet pod would
// pass: mock NVML of the node's profile and rack, and every path inside the
// node's host root (which gets the mock's fake /dev, /proc and /sys).
func GPUPluginComponent() NodeComponent {
	return NodeComponent{
		Name: GPUPluginName,
		Run: func(ctx context.Context, env NodeEnv) error {
			return gpuapp.RunWithConfig(ctx, env.RESTConfig, GPUPluginArgs(env), nil)
		},
	}
}

// fakeHostRoot gives a node's host root the mock NVML's fake /dev, /proc
// and /sys, before any component starts.
func fakeHostRoot(spec topology.NodeSpec, root string) error {
	profile, err := mock.LoadProfile(spec.Profile.Name)
	if err != nil {
		return err
	}
	if _, err := hostroot.Fake(root, profile.FakeHostRootSpec(spec.Name)); err != nil {
		return fmt.Errorf("node %s: fake host root: %w", spec.Name, err)
	}
	return nil
}

// GPUPluginArgs are the plugin's flags on a simulated node.
func GPUPluginArgs(env NodeEnv) []string {
	return append([]string{
		"--node-name=" + env.Spec.Name,
		"--driver-name=" + env.DriverName,
		"--host-root=" + env.Paths.Root,
		"--cdi-root=" + env.Paths.CDI,
		"--kubelet-registrar-directory-path=" + env.Paths.PluginsRegistry,
		"--kubelet-plugins-directory-path=" + env.Paths.Plugins,
	}, mockNVMLArgs(env)...)
}

// mockNVMLArgs select the mock NVML of the node's profile and rack.
func mockNVMLArgs(env NodeEnv) []string {
	return []string{
		"--nvml=mock",
		"--nvml-mock-profile=" + env.Spec.Profile.Name,
		"--nvml-mock-node-name=" + env.Spec.Name,
		"--nvml-mock-cluster=" + topology.MockClusterName,
		"--nvml-mock-rack=" + strconv.Itoa(max(env.Spec.Rack, 0)),
	}
}
