package startup

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Main is the whole main function of a binary whose work is run (its package app's Run): run gets the
// arguments and a context that SIGINT or SIGTERM cancels; a help request exits 0, any other error is
// printed after the binary's name and exits 1.
func Main(name string, run func(ctx context.Context, args []string) error) {
	// controller-runtime logs a few things (watch stream errors) through its process-global logger:
	// route them to klog rather than drop them behind a warning. Components log through their own.
	ctrllog.SetLogger(klog.Background())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err == nil || errors.Is(err, flag.ErrHelp) || errors.Is(err, pflag.ErrHelp) {
		return
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	os.Exit(1)
}
