// Command gpu-kubelet-plugin is the kubelet plugin of the gpu.nvidia.com DRA
// driver. All of it lives in package app, so the simulated cluster can run one
// instance per node in one process.
package main

import (
	"github.com/computedomain-operator/computedomain-operator/cmd/gpu-kubelet-plugin/app"
	"github.com/computedomain-operator/computedomain-operator/cmd/internal/startup"
)

func main() { startup.Main("gpu-kubelet-plugin", app.Run) }
