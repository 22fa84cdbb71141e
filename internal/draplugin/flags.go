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

package draplugin

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2/textlogger"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml/backend"
)

// Flags are the command-line settings every kubelet plugin has: which node and
// driver it serves, how it reaches the API server, and where its files live.
type Flags struct {
	NodeName       string
	Kubeconfig     string
	DriverName     string
	HostRoot       string
	CDIRoot        string
	RegistrarDir   string
	PluginsDir     string
	MetricsAddress string
	// NVML selects and configures the NVML backend; set by Parse.
	NVML backend.Options
	// Log configures the text logger (-v, --vmodule); set by Parse.
	Log *textlogger.Config
}

// FlagHelp is the part of the flags' help that differs between plugins.
type FlagHelp struct {
	// DriverName is the --driver-name default.
	DriverName string
	// HostRoot says which host directories the plugin reads.
	HostRoot string
	// PluginsDir says what lives under <plugins dir>/<driver>.
	PluginsDir string
	// MetricsAddress says what --metrics-address is, with an example.
	MetricsAddress string
	// Subcommands are named when a positional argument is refused.
	Subcommands []string
}

// AddFlags registers the flags on fs; lookup is the environment (NODE_NAME is
// the --node-name default).
func (f *Flags) AddFlags(fs *pflag.FlagSet, lookup func(string) (string, bool), help FlagHelp) {
	nodeDefault, _ := lookup("NODE_NAME")
	fs.StringVar(&f.NodeName, "node-name", nodeDefault, "Name of this node: the pool name and owner of the ResourceSlices [env NODE_NAME].")
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty: the in-cluster config.")
	fs.StringVar(&f.DriverName, "driver-name", help.DriverName, "DRA driver name; also the domain of the device attributes.")
	fs.StringVar(&f.HostRoot, "host-root", "/", help.HostRoot)
	fs.StringVar(&f.CDIRoot, "cdi-root", "/var/run/cdi", "Directory the per-claim CDI specs are written to.")
	fs.StringVar(&f.RegistrarDir, "kubelet-registrar-directory-path", DefaultRegistrarDir, "Directory of the kubelet's plugin registration sockets.")
	fs.StringVar(&f.PluginsDir, "kubelet-plugins-directory-path", DefaultPluginsDir, help.PluginsDir)
	fs.StringVar(&f.MetricsAddress, "metrics-address", "", help.MetricsAddress)
}

// Validate checks the parsed flags; each error names its flag and what it
// allows.
func (f *Flags) Validate() error {
	if f.NodeName == "" {
		return errors.New("--node-name: required (or NODE_NAME)")
	}
	if errs := validation.IsDNS1123Subdomain(f.DriverName); len(errs) > 0 {
		return fmt.Errorf("--driver-name %q: must be a DNS subdomain: %v", f.DriverName, errs)
	}
	for _, dir := range []struct{ flag, path string }{
		{"--host-root", f.HostRoot},
		{"--cdi-root", f.CDIRoot},
		{"--kubelet-registrar-directory-path", f.RegistrarDir},
		{"--kubelet-plugins-directory-path", f.PluginsDir},
	} {
		if !filepath.IsAbs(dir.path) {
			return fmt.Errorf("%s %q: must be an absolute path", dir.flag, dir.path)
		}
	}
	return nil
}

// Options locate the plugin on its node; the caller adds the client.
func (f *Flags) Options() Options {
	return Options{DriverName: f.DriverName, NodeName: f.NodeName, RegistrarDir: f.RegistrarDir, PluginsDir: f.PluginsDir}
}

// Parse parses a plugin's command line: the flags every plugin has
// (AddFlags), the NVML backend's and the logger's, next to the plugin's own,
// which the caller registered on fs before and checks after. Positional
// arguments are refused (a caller takes its subcommand off args first).
func (f *Flags) Parse(fs *pflag.FlagSet, args []string, lookup func(string) (string, bool), help FlagHelp) error {
	f.NVML = backend.OptionsFromEnv(lookup)
	f.Log = textlogger.NewConfig()
	f.AddFlags(fs, lookup, help)
	f.NVML.AddFlags(fs)
	goflags := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	f.Log.AddFlags(goflags)
	fs.AddGoFlagSet(goflags)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		msg := "every setting is a flag"
		if len(help.Subcommands) > 0 {
			msg = fmt.Sprintf("the only subcommands are %s, every setting is a flag", strings.Join(help.Subcommands, ", "))
		}
		return fmt.Errorf("unexpected arguments %q: %s", fs.Args(), msg)
	}
	if err := f.Validate(); err != nil {
		return err
	}
	if f.NVML.NodeName == "" {
		f.NVML.NodeName = f.NodeName
	}
	return f.NVML.Validate()
}
