// Command compute-domain-kubelet-plugin is the compute-domain.nvidia.com DRA
// kubelet plugin; see package kubeletplugin/computedomain.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-kubelet-plugin/app"
)

func main() {
	// controller-runtime logs a few things (watch stream errors) through its process-global logger:
	// route them to klog rather than drop them behind a warning. Components log through their own.
	ctrllog.SetLogger(klog.Background())
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "compute-domain-kubelet-plugin:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return app.Run(ctx, os.Args[1:])
}
