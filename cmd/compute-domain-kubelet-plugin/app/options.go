// Package app is the compute-domain-kubelet-plugin binary. Run holds no
// process-global state (its own flag set, logger, metrics registry, NVML
// handle, clients), so the simulated cluster runs one instance per node in
// one process.
package app

import (
	"flag"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2/textlogger"

	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/backend"
	"github.com/computedomain-operator/computedomain-operator/kubeletplugin/computedomain"
)

// options are the command-line flags.
type options struct {
	draplugin.Flags
	channelSlots int
	daemonSlots  int
	readyWait    time.Duration
	nvml         backend.Options
	logConfig    *textlogger.Config
}

// parse reads the flags; lookup is the environment (os.LookupEnv in a
// binary).
func parse(args []string, lookup func(string) (string, bool)) (*options, error) {
	o := &options{nvml: backend.OptionsFromEnv(lookup), logConfig: textlogger.NewConfig()}
	const name = "compute-domain-kubelet-plugin"
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	o.AddFlags(fs, lookup, draplugin.FlagHelp{
		DriverName:     computedomain.DefaultDriverName,
		HostRoot:       "Directory where the host's /dev and /proc are visible.",
		PluginsDir:     "Directory under which <driver>/dra.sock, the checkpoint and the domains' IMEX config directories live.",
		MetricsAddress: "Address of the Prometheus /metrics endpoint (e.g. :9091); empty: off.",
	})
	fs.IntVar(&o.channelSlots, "channel-slots", computedomain.DefaultChannelSlots, "Number of channel-<i> devices: workload claims of any domains this node can hold at once.")
	fs.IntVar(&o.daemonSlots, "daemon-slots", computedomain.DefaultDaemonSlots, "Number of daemon-<i> devices: domains whose IMEX daemon this node can run at once.")
	fs.DurationVar(&o.readyWait, "ready-wait", computedomain.DefaultReadyWait, "How long one prepare of a workload claim waits for its domain to be ready on this node before a retryable error (at most 10s; the kubelet's call timeout is 45s).")
	o.nvml.AddFlags(fs)
	goflags := flag.NewFlagSet(name, flag.ContinueOnError)
	o.logConfig.AddFlags(goflags)
	fs.AddGoFlagSet(goflags)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q: every setting is a flag", fs.Args())
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.nvml.NodeName == "" {
		o.nvml.NodeName = o.NodeName
	}
	if o.channelSlots < 1 || o.daemonSlots < 1 || o.channelSlots+o.daemonSlots > 128 {
		return nil, fmt.Errorf("--channel-slots %d, --daemon-slots %d: each at least 1, together at most 128 (one ResourceSlice)", o.channelSlots, o.daemonSlots)
	}
	if o.readyWait <= 0 || o.readyWait > 10*time.Second {
		return nil, fmt.Errorf("--ready-wait %s: must be more than 0 and at most 10s", o.readyWait)
	}
	if err := o.nvml.Validate(); err != nil {
		return nil, err
	}
	return o, nil
}
