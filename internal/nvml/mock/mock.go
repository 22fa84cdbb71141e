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

package mock

import (
	"fmt"
	"sync"

	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// MIGMode chooses how MIG-enabled GPUs start.
type MIGMode string

const (
	// MIGStatic creates the profile's static layouts at New (the default).
	MIGStatic MIGMode = "static"
	// MIGDynamic starts every GPU MIG-enabled and empty, for partitionable
	// MIG: instances are created and destroyed on demand.
	MIGDynamic MIGMode = "dynamic"
)

// DefaultClusterName seeds the fabric cluster UUIDs when Config.Cluster is
// empty.
const DefaultClusterName = "sim"

// Config describes one simulated node.
type Config struct {
	// NodeName seeds every hardware identity; required.
	NodeName string
	// Profile names an embedded profile (see ProfileNames). Ignored when
	// ProfileSpec is set.
	Profile string
	// ProfileSpec is a profile loaded elsewhere (LoadProfileFile).
	ProfileSpec *Profile
	// Cluster and Rack select the NVLink domain of a node with fabric:
	// every node of the same cluster and rack reports the same clique.
	Cluster string
	Rack    int
	// ClusterUUID and CliqueID, when set, override the derived fabric
	// identity.
	ClusterUUID string
	CliqueID    *uint32
	// MIG chooses static layouts or dynamic (empty) MIG; default static.
	MIG MIGMode
	// MIGDeviceHook, when set, is called (under the node's lock) after a MIG
	// device (compute instance) is created or destroyed, with the parent's
	// minor and the GPU and compute instance IDs, so that a fake host root
	// can mirror the driver's capability files (hostroot.Root.AddMIGDevice).
	// A failing hook fails the create (ERROR_UNKNOWN, nothing created).
	MIGDeviceHook func(gpuMinor, gi, ci int, created bool) error
	// PCIDriver, when set, names the driver a GPU's PCI function (sysfs bus
	// ID "0000:1b:00.0") is bound to. As with the real library, a GPU that is
	// not bound to "nvidia" (handed to vfio-pci for passthrough) does not
	// exist for NVML: it is left out of the count and the indexes, and its
	// UUID is not found. nil: every GPU is bound to nvidia.
	PCIDriver func(busID string) string
	// StateFile, when set, keeps the GPUs' state across processes as the
	// hardware does (state_file.go): New restores it, every change is
	// written to it before the call returns.
	StateFile string
}

// Lib is one simulated node's NVML. It implements nvml.Interface.
type Lib struct {
	mu        sync.Mutex
	cfg       Config
	profile   *Profile
	initCount int
	gpus      []*gpu
	sets      map[*eventSet]struct{}
	// delivered remembers the fault-file Xid entries already injected.
	delivered map[string]bool
	// eventSetFault, unless SUCCESS, is what EventSetCreate returns.
	eventSetFault nvml.Return
}

var _ nvml.Interface = (*Lib)(nil)

// New builds a simulated node. The result still needs Init, like the real
// library.
func New(cfg Config) (*Lib, error) {
	if cfg.NodeName == "" {
		return nil, fmt.Errorf("mock NVML: NodeName: required")
	}
	p := cfg.ProfileSpec
	if p == nil {
		if cfg.Profile == "" {
			return nil, fmt.Errorf("mock NVML: Profile: required (allowed: %v)", ProfileNames())
		}
		var err error
		if p, err = LoadProfile(cfg.Profile); err != nil {
			return nil, fmt.Errorf("mock NVML: %w", err)
		}
	}
	switch cfg.MIG {
	case "":
		cfg.MIG = MIGStatic
	case MIGStatic, MIGDynamic:
	default:
		return nil, fmt.Errorf("mock NVML: MIG %q: allowed: %s, %s", cfg.MIG, MIGStatic, MIGDynamic)
	}
	if cfg.Cluster == "" {
		cfg.Cluster = DefaultClusterName
	}
	m := &Lib{cfg: cfg, profile: p, sets: map[*eventSet]struct{}{}, delivered: map[string]bool{}}
	var clusterUUID [16]byte
	if p.multiNode() {
		s := cfg.ClusterUUID
		if s == "" {
			s = RackClusterUUID(cfg.Cluster, cfg.Rack)
		}
		var err error
		if clusterUUID, err = nvml.ParseClusterUUID(s); err != nil {
			return nil, fmt.Errorf("mock NVML: ClusterUUID: %w", err)
		}
	}
	for i := 0; i < p.GPUCount; i++ {
		m.gpus = append(m.gpus, newGPU(m, i, clusterUUID))
	}
	if cfg.StateFile != "" {
		restored, err := m.restore()
		if err != nil {
			return nil, err
		}
		if restored {
			return m, nil
		}
	}
	for i, g := range m.gpus {
		if p.MIG == nil || cfg.MIG == MIGDynamic || len(p.MIG.Layouts) == 0 {
			continue
		}
		for _, inst := range p.MIG.Layouts[i%len(p.MIG.Layouts)] {
			mp := p.migProfile(inst.Profile)
			gi, r := g.createGI(mp, inst.Start)
			if r != nvml.SUCCESS {
				return nil, fmt.Errorf("mock NVML: GPU %d: static layout %s at %d: nvml return %d", i, inst.Profile, inst.Start, int32(r))
			}
			if _, r := gi.createCI(fullCIProfile(mp.Slices)); r != nvml.SUCCESS {
				return nil, fmt.Errorf("mock NVML: GPU %d: compute instance of %s: nvml return %d", i, inst.Profile, int32(r))
			}
		}
	}
	if r := m.persistLocked(); r != nvml.SUCCESS {
		return nil, fmt.Errorf("mock NVML: write the state file %s: nvml return %d", cfg.StateFile, int32(r))
	}
	return m, nil
}

func (p *Profile) multiNode() bool { return p.Fabric != nil && p.Fabric.MultiNode }

// Profile returns the node's profile.
func (m *Lib) Profile() *Profile { return m.profile }

// NodeName returns the node name the identities derive from.
func (m *Lib) NodeName() string { return m.cfg.NodeName }

// Init counts references like the real library.
func (m *Lib) Init() nvml.Return {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.initCount++
	return nvml.SUCCESS
}

// Shutdown releases one Init.
func (m *Lib) Shutdown() nvml.Return {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.initCount == 0 {
		return nvml.ERROR_UNINITIALIZED
	}
	m.initCount--
	return nvml.SUCCESS
}

// ErrorString names a return code like nvmlErrorString.
func (m *Lib) ErrorString(r nvml.Return) string {
	switch r {
	case nvml.SUCCESS:
		return "Success"
	case nvml.ERROR_UNINITIALIZED:
		return "Uninitialized"
	case nvml.ERROR_INVALID_ARGUMENT:
		return "Invalid Argument"
	case nvml.ERROR_NOT_SUPPORTED:
		return "Not Supported"
	case nvml.ERROR_NOT_FOUND:
		return "Not Found"
	case nvml.ERROR_INSUFFICIENT_RESOURCES:
		return "Insufficient Resources"
	case nvml.ERROR_TIMEOUT:
		return "Timeout"
	case nvml.ERROR_GPU_IS_LOST:
		return "GPU is lost"
	case nvml.ERROR_IN_USE:
		return "In use by another client"
	}
	return fmt.Sprintf("Unknown Error (%d)", int32(r))
}

func (m *Lib) initialized() nvml.Return {
	if m.initCount == 0 {
		return nvml.ERROR_UNINITIALIZED
	}
	return nvml.SUCCESS
}

// SystemGetDriverVersion returns the profile's driver version.
func (m *Lib) SystemGetDriverVersion() (string, nvml.Return) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.initialized(); r != nvml.SUCCESS {
		return "", r
	}
	return m.profile.DriverVersion, nvml.SUCCESS
}

// SystemGetCudaDriverVersion returns the profile's CUDA version as 1000*major+10*minor.
func (m *Lib) SystemGetCudaDriverVersion() (int, nvml.Return) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.initialized(); r != nvml.SUCCESS {
		return 0, r
	}
	v, _ := parseMajorMinor(m.profile.CUDADriverVersion)
	return v, nvml.SUCCESS
}

// DeviceGetCount returns the number of GPUs bound to the nvidia driver, lost
// ones included.
func (m *Lib) DeviceGetCount() (int, nvml.Return) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.initialized(); r != nvml.SUCCESS {
		return 0, r
	}
	return len(m.visibleGPUs()), nvml.SUCCESS
}

// visibleGPUs are the GPUs bound to the nvidia driver, in index order: the
// ones NVML enumerates.
func (m *Lib) visibleGPUs() []*gpu {
	if m.cfg.PCIDriver == nil {
		return m.gpus
	}
	var out []*gpu
	for i, g := range m.gpus {
		if m.cfg.PCIDriver(m.profile.GPU.PCIBusIDs[i]) == hostroot.NvidiaPCIDriver {
			out = append(out, g)
		}
	}
	return out
}

// DeviceGetHandleByIndex returns a full GPU.
func (m *Lib) DeviceGetHandleByIndex(index int) (nvml.Device, nvml.Return) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.initialized(); r != nvml.SUCCESS {
		return nil, r
	}
	visible := m.visibleGPUs()
	if index < 0 || index >= len(visible) {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	g := visible[index]
	if g.lost {
		return nil, nvml.ERROR_GPU_IS_LOST
	}
	return &device{gpu: g}, nvml.SUCCESS
}

// DeviceGetHandleByUUID finds a full GPU or a MIG device.
func (m *Lib) DeviceGetHandleByUUID(uuid string) (nvml.Device, nvml.Return) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.initialized(); r != nvml.SUCCESS {
		return nil, r
	}
	for _, g := range m.visibleGPUs() {
		if g.uuid == uuid {
			if g.lost {
				return nil, nvml.ERROR_GPU_IS_LOST
			}
			return &device{gpu: g}, nvml.SUCCESS
		}
		for _, gi := range g.gis {
			for _, ci := range gi.cis {
				if ci.uuid == uuid {
					if g.lost {
						return nil, nvml.ERROR_GPU_IS_LOST
					}
					return &device{gpu: g, ci: ci}, nvml.SUCCESS
				}
			}
		}
	}
	return nil, nvml.ERROR_NOT_FOUND
}

// EventSetCreate creates an event set.
func (m *Lib) EventSetCreate() (nvml.EventSet, nvml.Return) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.initialized(); r != nvml.SUCCESS {
		return nil, r
	}
	if m.eventSetFault != nvml.SUCCESS {
		return nil, m.eventSetFault
	}
	s := newEventSet(m)
	m.sets[s] = struct{}{}
	return s, nvml.SUCCESS
}

func (m *Lib) gpu(index int) (*gpu, error) {
	if index < 0 || index >= len(m.gpus) {
		return nil, fmt.Errorf("GPU index %d: node %s has GPUs 0..%d", index, m.cfg.NodeName, len(m.gpus)-1)
	}
	return m.gpus[index], nil
}
