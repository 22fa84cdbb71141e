// Copyright The computedomain-operator Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

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
