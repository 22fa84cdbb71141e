// Command compute-domain-kubelet-plugin is the compute-domain.nvidia.com DRA
// kubelet plugin; see package kubeletplugin/computedomain.
package main

import (
	"github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-kubelet-plugin/app"
	"github.com/computedomain-operator/computedomain-operator/cmd/internal/startup"
)

func main() { startup.Main("compute-domain-kubelet-plugin", app.Run) }
