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
	"path/filepath"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/nodeagent"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/testdriver"
)

// NodeEnv is what a per-node component gets: its node, the node's host-root
// paths and a way to reach the cluster.
type NodeEnv struct {
	Spec       topology.NodeSpec
	Paths      nodeagent.Paths
	Client     kubernetes.Interface
	RESTConfig *rest.Config
	// Kubeconfig is a kubeconfig file for components that take a path.
	Kubeconfig string
	DriverName string
}

// NodeComponent is a component running on every node next to the node
// agent, such as a DRA kubelet plugin. Run serves until ctx ends.
type NodeComponent struct {
	Name string
	Run  func(ctx context.Context, env NodeEnv) error
}

// TestDriverComponent runs the test DRA driver (package testdriver) with the
// devices of the node's profile.
func TestDriverComponent() NodeComponent {
	return NodeComponent{
		Name: "test-dra-driver",
		Run: func(ctx context.Context, env NodeEnv) error {
			return testdriver.Run(ctx, testdriver.Config{
				DriverName:   env.DriverName,
				NodeName:     env.Spec.Name,
				Client:       env.Client,
				RegistrarDir: env.Paths.PluginsRegistry,
				PluginDir:    filepath.Join(env.Paths.Plugins, env.DriverName),
				CDIDir:       env.Paths.CDI,
				Devices:      TestDriverDevices(env.Spec),
			})
		},
	}
}
