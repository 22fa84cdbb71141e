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
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// Faults is the declarative fault state of a node: the content of the fault
// file. GPUs not listed are healthy; Xid entries are delivered once each.
type Faults struct {
	GPUs []GPUFault `json:"gpus,omitempty"`
	Xids []XidEvent `json:"xids,omitempty"`
}

// GPUFault is the fault state of one GPU.
type GPUFault struct {
	Index int `json:"index"`
	// Lost: the GPU has fallen off the bus.
	Lost bool `json:"lost,omitempty"`
	// FabricState: NotStarted, InProgress or Completed (default Completed).
	FabricState FabricState `json:"fabricState,omitempty"`
	// FabricDegraded sets the degraded-bandwidth health bit.
	FabricDegraded bool `json:"fabricDegraded,omitempty"`
	// CliqueID makes this GPU disagree with its siblings.
	CliqueID *uint32 `json:"cliqueId,omitempty"`
}

// XidEvent is one Xid to deliver.
type XidEvent struct {
	// ID makes the entry unique; entries are delivered once per ID (default:
	// the entry's position, GPU and Xid).
	ID  string `json:"id,omitempty"`
	GPU int    `json:"gpu"`
	Xid uint64 `json:"xid"`
	// GI and CI attribute the event to a MIG instance.
	GI *uint32 `json:"gi,omitempty"`
	CI *uint32 `json:"ci,omitempty"`
}

// ParseFaults decodes a fault file strictly.
func ParseFaults(data []byte) (*Faults, error) {
	var f Faults
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("decode faults: %w", err)
	}
	return &f, nil
}

// WriteFile writes the faults to path atomically (a temporary file renamed
// over it), as a test or operator outside the process should, so that a
// watching mock never reads half a file.
func (f Faults) WriteFile(path string) error {
	data, err := yaml.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode faults: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write fault file: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write fault file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write fault file: %w", err)
	}
	return nil
}

// ApplyFaults makes the node's fault state equal f: listed GPUs get their
// faults, all others are healed; Xid entries not delivered before are
// delivered now. Nothing is applied when f names a GPU or state that does
// not exist.
func (m *Lib) ApplyFaults(f Faults) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	byIndex := map[int]GPUFault{}
	for i, gf := range f.GPUs {
		if _, err := m.gpu(gf.Index); err != nil {
			return fmt.Errorf("gpus[%d].index: %w", i, err)
		}
		if _, dup := byIndex[gf.Index]; dup {
			return fmt.Errorf("gpus[%d].index %d: listed twice", i, gf.Index)
		}
		fabricFault := gf.FabricState != "" || gf.FabricDegraded || gf.CliqueID != nil
		if fabricFault && m.profile.Fabric == nil {
			return fmt.Errorf("gpus[%d]: profile %s has no NVLink fabric: fabricState, fabricDegraded and cliqueId are not allowed", i, m.profile.Name)
		}
		if gf.CliqueID != nil && !m.profile.multiNode() {
			return fmt.Errorf("gpus[%d].cliqueId: profile %s has no multi-node NVLink fabric, so no clique", i, m.profile.Name)
		}
		if _, ok := fabricStates[gf.FabricState]; gf.FabricState != "" && !ok {
			return fmt.Errorf("gpus[%d].fabricState %q: allowed: %s, %s, %s", i, gf.FabricState, FabricNotStarted, FabricInProgress, FabricCompleted)
		}
		byIndex[gf.Index] = gf
	}
	for i, x := range f.Xids {
		if _, err := m.gpu(x.GPU); err != nil {
			return fmt.Errorf("xids[%d].gpu: %w", i, err)
		}
	}
	for _, g := range m.gpus {
		gf := byIndex[g.index]
		m.setLost(g, gf.Lost)
		if m.profile.Fabric != nil {
			state := gf.FabricState
			if state == "" {
				state = FabricCompleted
			}
			_ = g.setFabricState(state)
			g.setDegraded(gf.FabricDegraded)
			g.setClique(gf.CliqueID)
		}
	}
	for i, x := range f.Xids {
		key := x.ID
		if key == "" {
			key = fmt.Sprintf("#%d/gpu%d/xid%d", i, x.GPU, x.Xid)
		}
		if m.delivered[key] {
			continue
		}
		m.delivered[key] = true
		gi, ci := noInstance(x.GI), noInstance(x.CI)
		m.gpus[x.GPU].emit(nvml.EventTypeXidCriticalError, x.Xid, gi, ci)
	}
	return nil
}

// ApplyFaultFile reads a fault file and applies it; a missing file means no
// faults.
func (m *Lib) ApplyFaultFile(path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return m.ApplyFaults(Faults{})
	}
	if err != nil {
		return fmt.Errorf("read fault file: %w", err)
	}
	f, err := ParseFaults(data)
	if err != nil {
		return fmt.Errorf("fault file %s: %w", path, err)
	}
	if err := m.ApplyFaults(*f); err != nil {
		return fmt.Errorf("fault file %s: %w", path, err)
	}
	return nil
}

// DefaultFaultPollInterval is how often WatchFaultFile reads the file.
const DefaultFaultPollInterval = 500 * time.Millisecond

// WatchFaultFile applies the fault file now and every time its content
// changes, until ctx ends. It polls (interval <= 0 means
// DefaultFaultPollInterval), which works on every file system and across
// container mounts. A bad file is logged and skipped; the previous state
// stays. It returns ctx's error.
func (m *Lib) WatchFaultFile(ctx context.Context, path string, interval time.Duration) error {
	logger := klog.FromContext(ctx).WithValues("node", m.cfg.NodeName, "faultFile", path)
	if interval <= 0 {
		interval = DefaultFaultPollInterval
	}
	var last []byte
	first := true
	check := func() {
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			data, err = nil, nil
		}
		if err != nil {
			logger.Error(err, "Reading fault file failed")
			return
		}
		if !first && bytes.Equal(data, last) {
			return
		}
		first, last = false, data
		f := &Faults{}
		if len(data) > 0 {
			if f, err = ParseFaults(data); err != nil {
				logger.Error(err, "Fault file is invalid; keeping the previous faults")
				return
			}
		}
		if err := m.ApplyFaults(*f); err != nil {
			logger.Error(err, "Fault file is invalid; keeping the previous faults")
			return
		}
		logger.V(2).Info("Applied fault file", "faultyGPUs", len(f.GPUs), "xids", len(f.Xids))
	}
	check()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			check()
		}
	}
}

func noInstance(id *uint32) uint32 {
	if id == nil {
		return nvml.NoInstanceID
	}
	return *id
}
