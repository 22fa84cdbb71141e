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

// Package app is the gpu-kubelet-plugin binary. Run holds no process-global
// state (its own flag set, logger, metrics registry, NVML handle), so the
// simulated cluster runs one instance per node in one process.
package app

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
	"github.com/computedomain-operator/computedomain-operator/internal/featuregates"
	"github.com/computedomain-operator/computedomain-operator/kubeletplugin/gpu"
)

// options are the command-line flags.
type options struct {
	draplugin.Flags
	partitionableMIG bool
	featureGates     string
	gates            featuregates.Set
	consumableShares string
	shares           gpu.Shares
	// driverRoot and driverRootHostPath are set to their defaults by parse.
	driverRoot         string
	driverRootHostPath string
	// mpsControlBinary is set to its default by parse.
	mpsControlBinary string
	compareProfile   string
	// usageRetention is how long closed intervals stay in the usage ledger.
	usageRetention time.Duration
	// inspect is the dry-run subcommand.
	inspect bool
}

// parse reads the flags; lookup is the environment (os.LookupEnv in a
// binary).
func parse(args []string, lookup func(string) (string, bool)) (*options, error) {
	o := &options{}
	if len(args) > 0 && args[0] == "inspect" {
		o.inspect, args = true, args[1:]
	}
	name := "gpu-kubelet-plugin"
	if o.inspect {
		name += " inspect"
	}
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.BoolVar(&o.partitionableMIG, "partitionable-mig", false, "Publish MIG-enabled GPUs as shared counters and every profile/placement, and create MIG instances on prepare (KEP-4815).")
	fs.StringVar(&o.featureGates, "feature-gates", "", featuregates.Help(gpu.FeatureGates))
	sharesDefault, ok := lookup("CONSUMABLE_SHARES")
	if !ok || sharesDefault == "" {
		sharesDefault = string(gpu.SharesDisabled)
	}
	fs.StringVar(&o.consumableShares, "consumable-shares", sharesDefault, "Publish GPUs and static MIG devices for several claims at once (consumable capacity; needs the ConsumableShares gate): disabled; unlimited (any number of claims, memory requests optional, default 0); memory (a claim gets the memory it asks for, all of it by default, never more than the device has); or a positive integer N (N shares per device, one per claim by default) [env CONSUMABLE_SHARES].")
	fs.StringVar(&o.driverRoot, "driver-root", "", "Directory where the NVIDIA driver's root (its libraries and tools, mounted into GPU containers) is visible; empty: --host-root.")
	fs.StringVar(&o.driverRootHostPath, "driver-root-host-path", "", "Path of the driver root on the host, which the CDI mounts name (/ for a driver installed on the host, /run/nvidia/driver for the GPU Operator's); empty: --driver-root.")
	mpsDefault, _ := lookup("MPS_CONTROL_BINARY")
	fs.StringVar(&o.mpsControlBinary, "mps-control-binary", mpsDefault, "Absolute path of nvidia-cuda-mps-control, which the plugin runs as one MPS control daemon per MPS claim; empty: "+gpu.DefaultMPSControlBinary+" under --driver-root. Where no driver exists (mock NVML on kind), the image's /usr/bin/mps-control-standin stands in [env MPS_CONTROL_BINARY].")
	fs.DurationVar(&o.usageRetention, "usage-retention", gpu.DefaultUsageRetention, "How long the usage ledger (usage.jsonl next to the checkpoint, served at /usage on --metrics-address) keeps closed usage intervals; the metering component must read the ledger within this time or lose them (e.g. 744h).")
	if o.inspect {
		fs.StringVar(&o.compareProfile, "compare-profile", "", "Also build a mock node of this profile and list where its devices differ from this node's (run on a real GPU node to check a profile).")
	}
	err := o.Parse(fs, args, lookup, draplugin.FlagHelp{
		DriverName:     gpu.DefaultDriverName,
		HostRoot:       "Directory where the host's /dev, /proc and /sys are visible.",
		PluginsDir:     "Directory under which <driver>/dra.sock and the checkpoint live.",
		MetricsAddress: "Address of the Prometheus /metrics endpoint (e.g. :9090); empty: off.",
		Subcommands:    []string{"inspect"},
	})
	if err != nil {
		return nil, err
	}
	if o.gates, err = featuregates.Parse(gpu.FeatureGates, o.featureGates); err != nil {
		return nil, err
	}
	if o.shares, err = gpu.ParseShares(o.consumableShares); err != nil {
		return nil, err
	}
	if err := gpu.CheckShares(o.shares, o.gates); err != nil {
		return nil, err
	}
	if o.usageRetention < time.Hour {
		return nil, fmt.Errorf("--usage-retention %s: must be at least 1h (closed intervals are kept that long for the metering component)", o.usageRetention)
	}
	o.partitionableMIG = o.partitionableMIG || o.gates.Enabled(gpu.DynamicMIG)
	if o.driverRoot == "" {
		o.driverRoot = o.HostRoot
	}
	if o.driverRootHostPath == "" {
		o.driverRootHostPath = o.driverRoot
	}
	if o.mpsControlBinary == "" {
		o.mpsControlBinary = filepath.Join(o.driverRoot, gpu.DefaultMPSControlBinary)
	}
	for _, dir := range []struct{ flag, path string }{
		{"--driver-root", o.driverRoot},
		{"--driver-root-host-path", o.driverRootHostPath},
		{"--mps-control-binary", o.mpsControlBinary},
	} {
		if !filepath.IsAbs(dir.path) {
			return nil, fmt.Errorf("%s %q: must be an absolute path", dir.flag, dir.path)
		}
	}
	return o, nil
}
