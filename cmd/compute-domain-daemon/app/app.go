package app

import (
	"context"
	"net"
	"os"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/cmd/internal/startup"
	"github.com/computedomain-operator/computedomain-operator/daemon"
	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
)

// Run parses args (defaults from the process environment) and runs the
// daemon until ctx ends. A logger in ctx is used as is; otherwise it logs to
// stderr with the -v/--vmodule flags.
func Run(ctx context.Context, args []string) error {
	return run(ctx, args, os.LookupEnv, nil)
}

// RunWithConfig is Run for callers that already hold a client config (the
// simulated cluster); --kubeconfig is ignored, and env replaces the process
// environment (the plugin-injected identity, POD_*, NODE_NAME).
func RunWithConfig(ctx context.Context, restConfig *rest.Config, args []string, env map[string]string) error {
	return run(ctx, args, startup.EnvLookup(env), func(ctx context.Context, _ *options) (client.WithWatch, error) {
		return newClient(ctx, rest.CopyConfig(restConfig))
	})
}

type clientFactory func(context.Context, *options) (client.WithWatch, error)

func run(ctx context.Context, args []string, lookup func(string) (string, bool), factory clientFactory) error {
	o, err := parse(args, lookup)
	if err != nil {
		return err
	}
	ctx = startup.WithLogger(ctx, o.logConfig, "compute-domain-daemon", o.nodeName)
	if factory == nil {
		factory = clientFromKubeconfig
	}
	c, err := factory(ctx, o)
	if err != nil {
		return err
	}
	return serve(ctx, o, c)
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

// serve wires the daemon: the domain watch, IMEX (a process or the in-process
// stand-in) and its prober.
func serve(ctx context.Context, o *options, c client.WithWatch) error {
	watch := daemon.NewDomainWatch(c, client.ObjectKey{Namespace: o.identity.DomainNamespace, Name: o.identity.DomainName})
	go watch.Run(ctx)

	var starter daemon.Starter
	var prober daemon.Prober
	if o.imexBinary == InProcessIMEX {
		starter = daemon.InProcessStandin{}
		prober = daemon.StandinProber{CmdAddress: net.JoinHostPort(o.ipAddress, strconv.Itoa(daemon.IMEXCommandPort))}
	} else {
		settings := daemon.IMEXSettings{ConfigDir: o.configDir}
		starter = daemon.ExecStarter{Binary: o.imexBinary, Stdout: os.Stdout, Stderr: os.Stderr}
		prober = daemon.NewCtlProber(o.imexCtl, settings.ConfigPath(), nil)
	}
	d, err := daemon.New(daemon.Options{
		Identity:      o.identity,
		NodeName:      o.nodeName,
		IPAddress:     o.ipAddress,
		Pod:           daemon.PodRef{Name: o.podName, Namespace: o.podNamespace, UID: types.UID(o.podUID)},
		Client:        c,
		Domain:        watch.Get,
		DomainChanged: watch.Changed(),
		DomainSynced:  watch.Synced,
		Starter:       starter,
		Prober:        prober,
	})
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("compute-domain daemon starting", "domain", klog.KRef(o.identity.DomainNamespace, o.identity.DomainName),
		"clique", o.identity.CliqueID, "ip", o.ipAddress, "imex", o.imexBinary)
	return d.Run(ctx)
}
