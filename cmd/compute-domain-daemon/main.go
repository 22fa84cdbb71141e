// Command compute-domain-daemon runs one node's IMEX daemon for one
// ComputeDomain; see package daemon.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-daemon/app"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "compute-domain-daemon:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return app.Run(ctx, os.Args[1:])
}
