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
	"k8s.io/client-go/rest"
)

// Names under which the project's components get their client
// configuration (Config.ComponentConfig); per-node components add
// "@<node>".
const (
	ControllerComponent     = "compute-domain-controller"
	GPUPluginName           = "gpu-kubelet-plugin"
	ComputeDomainPluginName = "compute-domain-kubelet-plugin"
)

// componentConfig is the client configuration one component gets: a copy
// of the admin configuration with the component's name as user agent,
// passed through Config.ComponentConfig when set.
func (c *Cluster) componentConfig(name string) *rest.Config {
	cfg := rest.CopyConfig(c.api.Config)
	cfg.UserAgent = name
	if c.cfg.ComponentConfig != nil {
		cfg = c.cfg.ComponentConfig(name, cfg)
	}
	return cfg
}
