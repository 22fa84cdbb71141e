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

package standin

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/computedomain-operator/computedomain-operator/internal/imex"
)

// ErrNotReady is returned by Run -q when the daemon is not ready (the command
// exits non-zero, as nvidia-imex-ctl does).
var ErrNotReady = errors.New("IMEX daemon is not ready")

// Main runs the stand-in command line of this process (os.Args) with its
// signals and exits: 1 on failure, with the error on stderr unless it is
// ErrNotReady (-q printed NOT_READY). It is the imex-standin binary, and what
// a test binary runs to be a stand-in process of its own.
func Main() {
	if err := Run(context.Background(), os.Args[1:], os.Stdout, true); err != nil {
		if !errors.Is(err, ErrNotReady) {
			fmt.Fprintln(os.Stderr, "imex-standin:", err)
		}
		os.Exit(1)
	}
	os.Exit(0)
}

// Run is the stand-in command line:
//
//	-c <config>        run the daemon (nvidia-imex -c <config>)
//	-c <config> -q     print READY or NOT_READY (nvidia-imex-ctl -q)
//	-c <config> -N     print the peers and their connection state
//
// As a daemon it runs until ctx ends or it gets SIGINT/SIGTERM (when
// handleSignals is true, i.e. in a process of its own); SIGHUP re-reads the
// nodes file.
func Run(ctx context.Context, args []string, stdout io.Writer, handleSignals bool) error {
	fs := flag.NewFlagSet("imex-standin", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configPath := fs.String("c", "/etc/nvidia-imex/config.cfg", "nvidia-imex config file")
	query := fs.Bool("q", false, "print READY when the local daemon is ready, NOT_READY otherwise")
	peers := fs.Bool("N", false, "print the peers of the local daemon and their connection state")
	timeout := fs.Duration("timeout", 2*time.Second, "how long -q and -N wait for the daemon")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			// -h/--help: the usage on stdout and success, like the operator's other binaries.
			_, _ = fmt.Fprintln(stdout, "Usage of imex-standin (stands in for nvidia-imex and nvidia-imex-ctl):")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
		return fmt.Errorf("%w (flags: -c <config file>, -q, -N, -timeout <duration>)", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (flags: -c <config file>, -q, -N, -timeout <duration>)", fs.Args())
	}
	if *query && *peers {
		return errors.New("-q and -N are exclusive")
	}
	cfg, err := imex.LoadConfig(*configPath)
	if err != nil {
		return err
	}
	switch {
	case *query:
		qctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		answer, err := Query(qctx, cfg.CmdAddress())
		if err != nil {
			klog.FromContext(ctx).V(4).Info("No answer from the IMEX daemon", "err", err)
			answer = imex.AnswerNotReady
		}
		if _, err := fmt.Fprintln(stdout, answer); err != nil {
			return err
		}
		if answer != imex.AnswerReady {
			return ErrNotReady
		}
		return nil
	case *peers:
		qctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		list, err := QueryPeers(qctx, cfg.CmdAddress())
		if err != nil {
			return err
		}
		for _, p := range list {
			if _, err := fmt.Fprintf(stdout, "%s %s\n", p.Address, p.State); err != nil {
				return err
			}
		}
		return nil
	}
	return runDaemon(ctx, cfg, handleSignals)
}

func runDaemon(ctx context.Context, cfg imex.Config, handleSignals bool) error {
	srv := NewServer(cfg, TCP)
	if handleSignals {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-hup:
					srv.Reload()
				}
			}
		}()
	}
	return srv.Run(ctx)
}
