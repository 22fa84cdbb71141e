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
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "compute-domain-kubelet-plugin:", err)
		os.Exit(1)
	}
}
