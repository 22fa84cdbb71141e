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
	if err := run(); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "gpu-kubelet-plugin:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return app.Run(ctx, os.Args[1:])
}
