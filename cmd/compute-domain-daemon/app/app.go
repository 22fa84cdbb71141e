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

package app

import (
	"context"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/cmd/internal/startup"
	"github.com/computedomain-operator/computedomain-operator/daemon"
	"github.com/computedomain-operator/computedomain-operator/internal/imex"
	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
)

// Run parses args (defaults from the process environment) and runs the
// daemon until ctx ends. A logger in ctx is used as is; otherwise it logs to
// stderr with the -v/--vmodule flags.
func Run(ctx context.Context, args []string) error {
	return run(ctx, args, os.LookupEnv, wiring{})
}

// RunWithConfig is Run for callers that already hold a client config (the
// simulated cluster); --kubeconfig is ignored, and env replaces the process
// environment (the plugin-injected identity, POD_*, NODE_NAME).
func RunWithConfig(ctx context.Context, restConfig *rest.Config, args []string, env map[string]string, opts ...Option) error {
	w := wiring{client: func(ctx context.Context, _ *options) (client.WithWatch, error) {
		return newClient(ctx, rest.CopyConfig(restConfig))
	}}
	for _, opt := range opts {
		opt(&w)
	}
	return run(ctx, args, startup.EnvLookup(env), w)
}

// IMEXFactory returns the IMEX starter and prober of a daemon whose IMEX
// listens on ipAddress and reads the config file at configPath.
type IMEXFactory func(ipAddress, configPath string) (imex.Starter, imex.Prober)

// Option changes what RunWithConfig wires into the daemon.
type Option func(*wiring)

// WithIMEX runs IMEX with what newIMEX returns instead of the --imex-binary
// process and the --imex-ctl query tool (the simulated cluster runs the
// stand-in in its own process).
func WithIMEX(newIMEX IMEXFactory) Option {
	return func(w *wiring) { w.imex = newIMEX }
}

type clientFactory func(context.Context, *options) (client.WithWatch, error)

// wiring is what a caller may inject; nil fields take the binary's defaults
// (the kubeconfig flag, the IMEX processes named by the flags).
type wiring struct {
	client clientFactory
	imex   IMEXFactory
}

func run(ctx context.Context, args []string, lookup func(string) (string, bool), w wiring) error {
	o, err := parse(args, lookup)
	if err != nil {
		return err
	}
	ctx = startup.WithLogger(ctx, o.logConfig, "compute-domain-daemon", o.nodeName)
	if w.client == nil {
		w.client = clientFromKubeconfig
	}
	c, err := w.client(ctx, o)
	if err != nil {
		return err
	}
	return serve(ctx, o, c, w.imex)
}

// newClient builds the daemon's client; it logs through ctx's logger, never
// controller-runtime's process-global one.
func newClient(ctx context.Context, cfg *rest.Config) (client.WithWatch, error) {
	scheme, err := kubescheme.New()
	if err != nil {
		return nil, err
	}
	return client.NewWithWatch(cfg, client.Options{Scheme: scheme, Log: klog.FromContext(ctx).WithName("client")})
}

func clientFromKubeconfig(ctx context.Context, o *options) (client.WithWatch, error) {
	cfg, err := startup.RestConfig(o.kubeconfig)
	if err != nil {
		return nil, err
	}
	return newClient(ctx, cfg)
}

// serve wires the daemon: the node's clique, its ensemble's watch, the
// IMEXNode, IMEX (by default the processes the flags name) and its prober.
func serve(ctx context.Context, o *options, c client.WithWatch, newIMEX IMEXFactory) error {
	pod := daemon.PodRef{Name: o.podName, Namespace: o.podNamespace, UID: types.UID(o.podUID)}
	dopts := daemon.Options{NodeName: o.nodeName, IPAddress: o.ipAddress, Pod: pod, Client: c}
	clique, err := daemon.WaitForNodeClique(ctx, c, o.nodeName, o.cliqueLabel)
	if err != nil {
		return err
	}
	o.identity.CliqueID = clique
	o.identity.ConfigDir = o.configDir
	watch := daemon.NewCliqueWatch(c, o.podNamespace, clique)
	go watch.Run(ctx)
	dopts.Ensemble, dopts.DomainChanged, dopts.DomainSynced = watch.Ensemble, watch.Changed(), watch.Synced
	dopts.Record = daemon.NewIMEXNodeRecord(c, pod, v1beta1.IMEXNodeSpec{NodeName: o.nodeName, IPAddress: o.ipAddress, CliqueID: clique})
	dopts.Identity = o.identity

	injected := newIMEX != nil
	if !injected {
		newIMEX = o.execIMEX
	}
	starter, prober := newIMEX(o.ipAddress, daemon.IMEXSettings{ConfigDir: o.configDir}.ConfigPath())
	imexName := o.imexBinary
	if injected {
		imexName = fmt.Sprintf("%T", starter)
	}
	dopts.Starter, dopts.Prober = starter, prober
	d, err := daemon.New(dopts)
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("compute-domain daemon starting", "clique", o.identity.CliqueID, "ip", o.ipAddress, "imex", imexName)
	return d.Run(ctx)
}

// execIMEX runs --imex-binary as a child process and asks --imex-ctl.
func (o *options) execIMEX(_, configPath string) (imex.Starter, imex.Prober) {
	return daemon.ExecStarter{Binary: o.imexBinary, Stdout: os.Stdout, Stderr: os.Stderr}, daemon.NewCtlProber(o.imexCtl, configPath, nil)
}
