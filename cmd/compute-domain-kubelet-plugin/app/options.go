// Package app is the compute-domain-kubelet-plugin binary. Run holds no
// process-global state (its own flag set, logger, metrics registry, NVML
// handle, clients), so the simulated cluster runs one instance per node in
// one process.
package app

import (
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2/textlogger"

	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/backend"
	"github.com/computedomain-operator/computedomain-operator/kubeletplugin/computedomain"
)

// options are the command-line flags.
type options struct {
	nodeName       string
	kubeconfig     string
	driverName     string
	hostRoot       string
	cdiRoot        string
	registrarDir   string
	pluginsDir     string
	metricsAddress string
	channelSlots   int
	daemonSlots    int
	readyWait      time.Duration
	nvml           backend.Options
	logConfig      *textlogger.Config
}

// parse reads the flags; lookup is the environment (os.LookupEnv in a
// binary).
func parse(args []string, lookup func(string) (string, bool)) (*options, error) {
	o := &options{nvml: backend.OptionsFromEnv(lookup), logConfig: textlogger.NewConfig()}
	const name = "compute-domain-kubelet-plugin"
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	nodeDefault, _ := lookup("NODE_NAME")
	fs.StringVar(&o.nodeName, "node-name", nodeDefault, "Name of this node: the pool name and owner of the ResourceSlices [env NODE_NAME].")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty: the in-cluster config.")
	fs.StringVar(&o.driverName, "driver-name", computedomain.DefaultDriverName, "DRA driver name; also the domain of the device attributes.")
	fs.StringVar(&o.hostRoot, "host-root", "/", "Directory where the host's /dev and /proc are visible.")
	fs.StringVar(&o.cdiRoot, "cdi-root", "/var/run/cdi", "Directory the per-claim CDI specs are written to.")
	fs.StringVar(&o.registrarDir, "kubelet-registrar-directory-path", draplugin.DefaultRegistrarDir, "Directory of the kubelet's plugin registration sockets.")
	fs.StringVar(&o.pluginsDir, "kubelet-plugins-directory-path", draplugin.DefaultPluginsDir, "Directory under which <driver>/dra.sock, the checkpoint and the domains' IMEX config directories live.")
	fs.StringVar(&o.metricsAddress, "metrics-address", "", "Address of the Prometheus /metrics endpoint (e.g. :9091); empty: off.")
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
	if o.nodeName == "" {
		return nil, fmt.Errorf("--node-name: required (or NODE_NAME)")
	}
	if errs := validation.IsDNS1123Subdomain(o.driverName); len(errs) > 0 {
		return nil, fmt.Errorf("--driver-name %q: must be a DNS subdomain: %v", o.driverName, errs)
	}
	if o.nvml.NodeName == "" {
		o.nvml.NodeName = o.nodeName
	}
	for _, f := range [][2]string{{"--host-root", o.hostRoot}, {"--cdi-root", o.cdiRoot}, {"--kubelet-registrar-directory-path", o.registrarDir}, {"--kubelet-plugins-directory-path", o.pluginsDir}} {
		if !filepath.IsAbs(f[1]) {
			return nil, fmt.Errorf("%s %q: must be an absolute path", f[0], f[1])
		}
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

func (o *options) drapluginOptions() draplugin.Options {
	return draplugin.Options{DriverName: o.driverName, NodeName: o.nodeName, RegistrarDir: o.registrarDir, PluginsDir: o.pluginsDir}
}
