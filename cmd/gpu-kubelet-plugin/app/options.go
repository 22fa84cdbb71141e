// Package app is the gpu-kubelet-plugin binary. Run holds no process-global
// state (its own flag set, logger, metrics registry, NVML handle), so the
// simulated cluster runs one instance per node in one process.
package app

import (
	"flag"
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2/textlogger"

	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/backend"
)

// DefaultDriverName is the driver this plugin serves unless --driver-name says otherwise.
const DefaultDriverName = "gpu.nvidia.com"

// options are the command-line flags.
type options struct {
	nodeName         string
	kubeconfig       string
	driverName       string
	hostRoot         string
	cdiRoot          string
	registrarDir     string
	pluginsDir       string
	metricsAddress   string
	partitionableMIG bool
	compareProfile   string
	nvml             backend.Options
	logConfig        *textlogger.Config
	// inspect is the dry-run subcommand.
	inspect bool
}

// parse reads the flags; lookup is the environment (os.LookupEnv in a
// binary).
func parse(args []string, lookup func(string) (string, bool)) (*options, error) {
	o := &options{nvml: backend.OptionsFromEnv(lookup), logConfig: textlogger.NewConfig()}
	if len(args) > 0 && args[0] == "inspect" {
		o.inspect, args = true, args[1:]
	}
	name := "gpu-kubelet-plugin"
	if o.inspect {
		name += " inspect"
	}
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	nodeDefault, _ := lookup("NODE_NAME")
	fs.StringVar(&o.nodeName, "node-name", nodeDefault, "Name of this node: the pool name and owner of the ResourceSlices [env NODE_NAME].")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty: the in-cluster config.")
	fs.StringVar(&o.driverName, "driver-name", DefaultDriverName, "DRA driver name; also the domain of the device attributes.")
	fs.StringVar(&o.hostRoot, "host-root", "/", "Directory where the host's /dev, /proc and /sys are visible.")
	fs.StringVar(&o.cdiRoot, "cdi-root", "/var/run/cdi", "Directory the per-claim CDI specs are written to.")
	fs.StringVar(&o.registrarDir, "kubelet-registrar-directory-path", draplugin.DefaultRegistrarDir, "Directory of the kubelet's plugin registration sockets.")
	fs.StringVar(&o.pluginsDir, "kubelet-plugins-directory-path", draplugin.DefaultPluginsDir, "Directory under which <driver>/dra.sock and the checkpoint live.")
	fs.StringVar(&o.metricsAddress, "metrics-address", "", "Address of the Prometheus /metrics endpoint (e.g. :9090); empty: off.")
	fs.BoolVar(&o.partitionableMIG, "partitionable-mig", false, "Publish MIG-enabled GPUs as shared counters and every profile/placement, and create MIG instances on prepare (KEP-4815).")
	if o.inspect {
		fs.StringVar(&o.compareProfile, "compare-profile", "", "Also build a mock node of this profile and list where its devices differ from this node's (run on a real GPU node to check a profile).")
	}
	o.nvml.AddFlags(fs)
	goflags := flag.NewFlagSet(name, flag.ContinueOnError)
	o.logConfig.AddFlags(goflags)
	fs.AddGoFlagSet(goflags)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q: the only subcommand is inspect, every setting is a flag", fs.Args())
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
	for flagName, dir := range map[string]string{"--host-root": o.hostRoot, "--cdi-root": o.cdiRoot, "--kubelet-registrar-directory-path": o.registrarDir, "--kubelet-plugins-directory-path": o.pluginsDir} {
		if !filepath.IsAbs(dir) {
			return nil, fmt.Errorf("%s %q: must be an absolute path", flagName, dir)
		}
	}
	if err := o.nvml.Validate(); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *options) drapluginOptions() draplugin.Options {
	return draplugin.Options{DriverName: o.driverName, NodeName: o.nodeName, RegistrarDir: o.registrarDir, PluginsDir: o.pluginsDir}
}
