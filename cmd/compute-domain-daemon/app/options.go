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

// Package app is the compute-domain-daemon binary. Run holds no
// process-global state (its own flag set, logger, clients), so the simulated
// cluster can run one daemon per node and domain in one process
// (RunWithConfig, with WithIMEX for an IMEX that is no process of its own).
package app

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"path/filepath"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2/textlogger"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/computedomain/identity"
)

// options are the command-line flags plus the identity from the environment.
type options struct {
	nodeName     string
	kubeconfig   string
	podName      string
	podNamespace string
	podUID       string
	ipAddress    string
	imexBinary   string
	imexCtl      string
	configDir    string
	// cliqueLabel is the node label that holds the node's clique.
	cliqueLabel string
	identity    identity.Identity
	logConfig   *textlogger.Config
}

// parse reads flags (defaults from the downward-API environment) and the
// domain identity the compute-domain plugin injected.
func parse(args []string, lookup func(string) (string, bool)) (*options, error) {
	env := func(k string) string { v, _ := lookup(k); return v }
	id, _ := identity.FromEnv(env) // only its config directory counts: the node's daemon serves no one domain
	o := &options{identity: id, logConfig: textlogger.NewConfig()}
	fs := pflag.NewFlagSet("compute-domain-daemon", pflag.ContinueOnError)
	fs.StringVar(&o.nodeName, "node-name", env("NODE_NAME"), "Name of this node [env NODE_NAME].")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty: the in-cluster config.")
	fs.StringVar(&o.podName, "pod-name", env("POD_NAME"), "Name of the daemon's Pod, owner of its IMEXNode [env POD_NAME].")
	fs.StringVar(&o.podNamespace, "pod-namespace", env("POD_NAMESPACE"), "Namespace of the daemon's Pod; its IMEXNode goes there [env POD_NAMESPACE].")
	fs.StringVar(&o.podUID, "pod-uid", env("POD_UID"), "UID of the daemon's Pod [env POD_UID].")
	fs.StringVar(&o.ipAddress, "ip-address", env("POD_IP"), "Address IMEX listens on and its peers dial [env POD_IP].")
	fs.StringVar(&o.imexBinary, "imex-binary", "/usr/bin/nvidia-imex", "The IMEX daemon (`-c <config>`).")
	fs.StringVar(&o.imexCtl, "imex-ctl", "/usr/bin/nvidia-imex-ctl", "The IMEX query tool (`-q -c <config>` prints READY).")
	fs.StringVar(&o.cliqueLabel, "clique-label", v1beta1.CliqueNodeLabelKey, "Node label holding the node's NVLink clique (the GPU kubelet plugin sets it).")
	fs.StringVar(&o.configDir, "config-dir", id.ConfigDir, "Directory for the IMEX config and nodes file [env "+identity.EnvConfigDir+", default "+identity.ContainerConfigDir+"].")
	goflags := flag.NewFlagSet("compute-domain-daemon", flag.ContinueOnError)
	o.logConfig.AddFlags(goflags)
	fs.AddGoFlagSet(goflags)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q: every setting is a flag", fs.Args())
	}
	// The node's daemon serves no one domain: no identity is injected.
	o.identity = identity.Identity{}
	if o.cliqueLabel == "" {
		return nil, errors.New("--clique-label: required (the node label holding the node's NVLink clique)")
	}
	for _, f := range [][2]string{{"--node-name", o.nodeName}, {"--pod-name", o.podName}, {"--pod-namespace", o.podNamespace}, {"--pod-uid", o.podUID}} {
		if f[1] == "" {
			return nil, fmt.Errorf("%s: required", f[0])
		}
	}
	if net.ParseIP(o.ipAddress) == nil {
		return nil, fmt.Errorf("--ip-address %q: must be an IPv4 or IPv6 address (env POD_IP)", o.ipAddress)
	}
	if !filepath.IsAbs(o.configDir) {
		return nil, fmt.Errorf("--config-dir %q: must be an absolute path", o.configDir)
	}
	if o.imexBinary == "" || o.imexCtl == "" {
		return nil, errors.New("--imex-binary and --imex-ctl: required")
	}
	o.identity.ConfigDir = o.configDir
	return o, nil
}
