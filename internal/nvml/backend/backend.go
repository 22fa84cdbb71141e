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

// Package backend selects the NVML implementation for a binary: the real
// driver (go-nvml) or the profile-driven mock, by flag and environment, so
// that the same binaries run on a GPU node, on kind and in the simulated
// cluster through one code path:
//
//	opts := backend.OptionsFromEnv(os.LookupEnv)
//	opts.AddFlags(fs)             // the binary's own FlagSet: no globals
//	_ = fs.Parse(args)
//	opts.HostRoot = root          // the binary's hostroot.Root
//	if opts.NodeName == "" { opts.NodeName = nodeName }
//	lib, err := backend.Open(ctx, opts)  // initialized; Shutdown when done
package backend

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
)

// Mode is the NVML implementation.
type Mode string

const (
	// ModeReal loads the driver's libnvidia-ml.
	ModeReal Mode = "real"
	// ModeMock simulates a node from a profile.
	ModeMock Mode = "mock"
)

// DefaultFaultFile is the host path (inside the host root) of the fault file
// a mock watches.
const DefaultFaultFile = "/var/run/nvml-mock/faults.yaml"

// Environment variables read by OptionsFromEnv; flags override them.
const (
	EnvMode          = "NVML_MODE"
	EnvLibraryPath   = "NVML_LIBRARY_PATH"
	EnvProfile       = "NVML_MOCK_PROFILE"
	EnvProfileFile   = "NVML_MOCK_PROFILE_FILE"
	EnvNodeName      = "NVML_MOCK_NODE_NAME"
	EnvNodeNameK8s   = "NODE_NAME"
	EnvCluster       = "NVML_MOCK_CLUSTER"
	EnvRack          = "NVML_MOCK_RACK"
	EnvMIG           = "NVML_MOCK_MIG"
	EnvFaultFile     = "NVML_MOCK_FAULT_FILE"
	EnvStateFile     = "NVML_MOCK_STATE_FILE"
	EnvMachineFile   = "NVML_MOCK_MACHINE_FILE"
	EnvNvidiaSMIPath = "NVML_NVIDIA_SMI_PATH"
)

// Options select and configure the implementation.
type Options struct {
	Mode Mode

	// Real mode.
	LibraryPath   string
	NvidiaSMIPath string

	// Mock mode.
	Profile     string
	ProfileFile string
	NodeName    string
	Cluster     string
	Rack        int
	MIG         string
	// MachineFile is a host path resolved under HostRoot: a mock.Machine
	// whose profile, cluster and rack take precedence over the options of the
	// same names, so that one DaemonSet serves simulated nodes of several
	// kinds.
	MachineFile string
	// FaultFile is a host path resolved under HostRoot; "" disables
	// watching.
	FaultFile         string
	FaultPollInterval time.Duration
	// StateFile is a host path resolved under HostRoot where the mock keeps
	// what a GPU keeps across processes (compute mode, time slice, MIG
	// instances); "" keeps it in the process only.
	StateFile string

	// HostRoot is set by the binary (not a flag of this package).
	HostRoot hostroot.Root
}

// OptionsFromEnv returns the defaults overridden by the environment.
// lookup is os.LookupEnv in a binary, a map in an in-process simulation.
func OptionsFromEnv(lookup func(string) (string, bool)) Options {
	get := func(key, def string) string {
		if v, ok := lookup(key); ok && v != "" {
			return v
		}
		return def
	}
	o := Options{
		Mode:          Mode(get(EnvMode, string(ModeReal))),
		LibraryPath:   get(EnvLibraryPath, ""),
		NvidiaSMIPath: get(EnvNvidiaSMIPath, ""),
		Profile:       get(EnvProfile, ""),
		ProfileFile:   get(EnvProfileFile, ""),
		NodeName:      get(EnvNodeName, get(EnvNodeNameK8s, "")),
		Cluster:       get(EnvCluster, mock.DefaultClusterName),
		MIG:           get(EnvMIG, string(mock.MIGStatic)),
		FaultFile:     get(EnvFaultFile, DefaultFaultFile),
		StateFile:     get(EnvStateFile, ""),
		MachineFile:   get(EnvMachineFile, ""),
	}
	if v, err := strconv.Atoi(get(EnvRack, "0")); err == nil {
		o.Rack = v
	}
	return o
}

// AddFlags registers the options on a FlagSet, with the current values as
// defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar((*string)(&o.Mode), "nvml", string(o.Mode), "NVML implementation: real (the driver's libnvidia-ml) or mock (a simulated node) [env "+EnvMode+"]")
	fs.StringVar(&o.LibraryPath, "nvml-library-path", o.LibraryPath, "libnvidia-ml.so to load in real mode; empty searches the default [env "+EnvLibraryPath+"]")
	fs.StringVar(&o.NvidiaSMIPath, "nvml-nvidia-smi-path", o.NvidiaSMIPath, "nvidia-smi used to set time slices in real mode [env "+EnvNvidiaSMIPath+"]")
	fs.StringVar(&o.Profile, "nvml-mock-profile", o.Profile, fmt.Sprintf("embedded mock profile, one of %v [env %s]", mock.ProfileNames(), EnvProfile))
	fs.StringVar(&o.ProfileFile, "nvml-mock-profile-file", o.ProfileFile, "mock profile YAML file; overrides --nvml-mock-profile [env "+EnvProfileFile+"]")
	fs.StringVar(&o.NodeName, "nvml-mock-node-name", o.NodeName, "node name the mock's UUIDs derive from [env "+EnvNodeName+", then "+EnvNodeNameK8s+"]")
	fs.StringVar(&o.Cluster, "nvml-mock-cluster", o.Cluster, "simulated cluster name; seeds the NVLink cluster UUIDs [env "+EnvCluster+"]")
	fs.IntVar(&o.Rack, "nvml-mock-rack", o.Rack, "rack (NVLink domain) of this node; nodes of a rack share a clique [env "+EnvRack+"]")
	fs.StringVar(&o.MIG, "nvml-mock-mig", o.MIG, "MIG at start: static (the profile's layouts) or dynamic (empty, partitioned on demand) [env "+EnvMIG+"]")
	fs.StringVar(&o.MachineFile, "nvml-mock-machine-file", o.MachineFile, "machine file (host path under the host root) naming this node's profile, cluster and rack; overrides --nvml-mock-profile, --nvml-mock-cluster and --nvml-mock-rack [env "+EnvMachineFile+"]")
	fs.StringVar(&o.FaultFile, "nvml-mock-fault-file", o.FaultFile, "fault file (host path under the host root) the mock watches; empty disables [env "+EnvFaultFile+"]")
	fs.StringVar(&o.StateFile, "nvml-mock-state-file", o.StateFile, "state file (host path under the host root) keeping the mock GPUs' compute mode, time slice and MIG instances across plugin processes, as the hardware does; empty keeps them in the process [env "+EnvStateFile+"]")
}

// Validate checks the options; errors name the flag and the allowed values.
func (o Options) Validate() error {
	switch o.Mode {
	case ModeReal:
		return nil
	case ModeMock:
	default:
		return fmt.Errorf("--nvml %q: allowed: %s, %s", o.Mode, ModeReal, ModeMock)
	}
	if o.Profile == "" && o.ProfileFile == "" && o.MachineFile == "" {
		return fmt.Errorf("--nvml=mock needs --nvml-mock-profile (one of %v), --nvml-mock-profile-file or --nvml-mock-machine-file", mock.ProfileNames())
	}
	if o.NodeName == "" {
		return fmt.Errorf("--nvml=mock needs --nvml-mock-node-name (or %s)", EnvNodeNameK8s)
	}
	switch mock.MIGMode(o.MIG) {
	case "", mock.MIGStatic, mock.MIGDynamic:
	default:
		return fmt.Errorf("--nvml-mock-mig %q: allowed: %s, %s", o.MIG, mock.MIGStatic, mock.MIGDynamic)
	}
	if o.Rack < 0 {
		return fmt.Errorf("--nvml-mock-rack %d: want 0 or more", o.Rack)
	}
	return nil
}

// Open builds the implementation and initializes it. In mock mode with a
// fault file it also watches that file until ctx ends. The caller calls
// Shutdown when done. Without a driver, real mode fails here with an error
// wrapping ERROR_LIBRARY_NOT_FOUND's message.
func Open(ctx context.Context, o Options) (nvml.Interface, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Mode == ModeMock && o.MachineFile != "" {
		m, err := mock.ReadMachineFile(o.HostRoot.Path(o.MachineFile))
		if err != nil {
			return nil, fmt.Errorf("--nvml-mock-machine-file: %w", err)
		}
		o.Profile, o.ProfileFile, o.Rack = m.Profile, "", m.Rack
		if m.Cluster != "" {
			o.Cluster = m.Cluster
		}
	}
	logger := klog.FromContext(ctx)
	var lib nvml.Interface
	switch o.Mode {
	case ModeReal:
		lib = nvml.NewReal(nvml.RealOptions{LibraryPath: o.LibraryPath, NvidiaSMIPath: o.NvidiaSMIPath})
	case ModeMock:
		m, err := newMock(o)
		if err != nil {
			return nil, err
		}
		lib = m
		if o.FaultFile != "" {
			path := o.HostRoot.Path(o.FaultFile)
			go func() { _ = m.WatchFaultFile(ctx, path, o.FaultPollInterval) }()
		}
	}
	if r := lib.Init(); r != nvml.SUCCESS {
		return nil, fmt.Errorf("initialize NVML (%s): %w", o.Mode, nvml.ReturnError(lib, "init", r))
	}
	logger.V(2).Info("NVML opened", "mode", o.Mode, "profile", o.Profile, "profileFile", o.ProfileFile, "node", o.NodeName)
	return lib, nil
}

func newMock(o Options) (*mock.Lib, error) {
	cfg := mock.Config{
		NodeName: o.NodeName,
		Profile:  o.Profile,
		Cluster:  o.Cluster,
		Rack:     o.Rack,
		MIG:      mock.MIGMode(o.MIG),
	}
	if o.StateFile != "" {
		cfg.StateFile = o.HostRoot.Path(o.StateFile)
	}
	if o.HostRoot.IsFake() {
		cfg.MIGDeviceHook = mock.HostRootMIGHook(o.HostRoot)
		cfg.PCIDriver = mock.HostRootPCIDriver(o.HostRoot)
	}
	if o.ProfileFile != "" {
		p, err := mock.LoadProfileFile(o.ProfileFile)
		if err != nil {
			return nil, fmt.Errorf("--nvml-mock-profile-file: %w", err)
		}
		cfg.ProfileSpec = p
	}
	return mock.New(cfg)
}
