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
