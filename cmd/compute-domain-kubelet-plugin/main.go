// Command compute-domain-kubelet-plugin is the compute-domain.nvidia.com DRA
// kubelet plugin; see package kubeletplugin/computedomain.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-kubelet-plugin/app"
)

func main() {
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
