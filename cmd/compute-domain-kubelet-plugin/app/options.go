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

// Package app is the compute-domain-kubelet-plugin binary. Run holds no
// process-global state (its own flag set, logger, metrics registry, NVML
// handle, clients), so the simulated cluster runs one instance per node in
// one process.
package app

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
	"github.com/computedomain-operator/computedomain-operator/kubeletplugin/computedomain"
)

// options are the command-line flags.
type options struct {
	draplugin.Flags
	channelSlots int
	daemonSlots  int
	readyWait    time.Duration
	operatorNS   string
}

// parse reads the flags; lookup is the environment (os.LookupEnv in a
// binary).
func parse(args []string, lookup func(string) (string, bool)) (*options, error) {
	o := &options{}
	fs := pflag.NewFlagSet("compute-domain-kubelet-plugin", pflag.ContinueOnError)
	fs.IntVar(&o.channelSlots, "channel-slots", computedomain.DefaultChannelSlots, "Number of channel-<i> devices: workload claims of any domains this node can hold at once.")
	fs.IntVar(&o.daemonSlots, "daemon-slots", computedomain.DefaultDaemonSlots, "Number of daemon-<i> devices: domains whose IMEX daemon this node can run at once.")
	fs.DurationVar(&o.readyWait, "ready-wait", computedomain.DefaultReadyWait, "How long one prepare of a workload (channel) claim waits, inside the call, for the domain's status to list this node Ready with a channel for its clique, before a retryable error (the kubelet retries it only at its next pod sync, 60-90s later); at most 35s (the kubelet's call timeout is 45s).")
	nsDefault, _ := lookup("POD_NAMESPACE")
	fs.StringVar(&o.operatorNS, "operator-namespace", nsDefault, "Namespace of the operator's IMEX daemon pods: the only namespace whose daemon claims are prepared [env POD_NAMESPACE].")
	err := o.Parse(fs, args, lookup, draplugin.FlagHelp{
		DriverName:     computedomain.DefaultDriverName,
		HostRoot:       "Directory where the host's /dev and /proc are visible.",
		PluginsDir:     "Directory under which <driver>/dra.sock, the checkpoint and the domains' IMEX config directories live.",
		MetricsAddress: "Address of the Prometheus /metrics endpoint (e.g. :9091); empty: off.",
	})
	if err != nil {
		return nil, err
	}
	if o.channelSlots < 1 || o.daemonSlots < 1 || o.channelSlots+o.daemonSlots > computedomain.MaxSlots {
		return nil, fmt.Errorf("--channel-slots %d, --daemon-slots %d: each at least 1, together at most %d (one ResourceSlice)", o.channelSlots, o.daemonSlots, computedomain.MaxSlots)
	}
	if o.readyWait <= 0 || o.readyWait > computedomain.MaxReadyWait {
		return nil, fmt.Errorf("--ready-wait %s: must be more than 0 and at most %s", o.readyWait, computedomain.MaxReadyWait)
	}
	if errs := validation.IsDNS1123Label(o.operatorNS); len(errs) > 0 {
		return nil, fmt.Errorf("--operator-namespace %q: must be a namespace name (or set POD_NAMESPACE): %v", o.operatorNS, errs)
	}
	return o, nil
}
