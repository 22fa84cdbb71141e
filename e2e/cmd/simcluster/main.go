// Command simcluster runs a simulated GPU cluster of real Kubernetes
// components: `simcluster up` serves a playground, `simcluster demo` runs the
// demo scenario.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/computedomain-operator/computedomain-operator/e2e/cmd/simcluster/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := app.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		_, _ = fmt.Fprintf(os.Stderr, "simcluster: %v\n", err)
		os.Exit(1)
	}
}
