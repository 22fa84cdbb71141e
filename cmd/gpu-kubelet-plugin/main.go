// Command gpu-kubelet-plugin is the kubelet plugin of the gpu.nvidia.com DRA
// driver. All of it lives in package app, so the simulated cluster can run one
// instance per node in one process.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/computedomain-operator/computedomain-operator/cmd/gpu-kubelet-plugin/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "gpu-kubelet-plugin:", err)
		os.Exit(1)
	}
}
