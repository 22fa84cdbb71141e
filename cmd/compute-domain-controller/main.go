// Command compute-domain-controller runs the ComputeDomain controller. All of it lives in package app, so
// the simulated cluster can run it in-process.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-controller/app"
)

func main() {
	// controller-runtime logs a few things (watch stream errors) through its process-global logger:
	// route them to klog rather than drop them behind a warning. Components log through their own.
	ctrllog.SetLogger(klog.Background())
	if err := app.Run(ctrl.SetupSignalHandler(), os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "compute-domain-controller:", err)
		os.Exit(1)
	}
}
