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

package fabricmanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/computedomain-operator/computedomain-operator/internal/atomicfile"
)

// MockPartition is one partition of a mock's table.
type MockPartition struct {
	ID int
	// GPUs are physical IDs; the GPU with physical ID i has bus ID
	// BusIDs[i-1].
	GPUs []int
}

// Mock is a Fabric Manager in shared NVSwitch mode serving a fixed
// partition table. Like the real one, it refuses to activate a partition that
// shares a GPU with an active one. With a state file the active partitions
// outlive the process (Fabric Manager keeps them across plugin restarts):
// every call reads it and every change is written to it before the call
// returns.
type Mock struct {
	mu        sync.Mutex
	table     []MockPartition
	busIDs    []string
	stateFile string
	active    map[int]bool
}

var _ Interface = (*Mock)(nil)

// NewMock returns a mock with the table; busIDs are the GPUs' bus IDs by
// physical ID - 1. stateFile may be "".
func NewMock(table []MockPartition, busIDs []string, stateFile string) (*Mock, error) {
	for _, p := range table {
		for _, g := range p.GPUs {
			if g < 1 || g > len(busIDs) {
				return nil, fmt.Errorf("mock fabric manager: partition %d: physical ID %d: want 1..%d", p.ID, g, len(busIDs))
			}
		}
	}
	return &Mock{table: table, busIDs: busIDs, stateFile: stateFile, active: map[int]bool{}}, nil
}

// mockState is the state file's content.
type mockState struct {
	Active []int `json:"activePartitions"`
}

func (m *Mock) load() error {
	if m.stateFile == "" {
		return nil
	}
	data, err := os.ReadFile(m.stateFile)
	if errors.Is(err, fs.ErrNotExist) {
		m.active = map[int]bool{}
		return nil
	}
	if err != nil {
		return err
	}
	var st mockState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("mock fabric manager state %s: %w", m.stateFile, err)
	}
	m.active = map[int]bool{}
	for _, id := range st.Active {
		m.active[id] = true
	}
	return nil
}

func (m *Mock) save() error {
	if m.stateFile == "" {
		return nil
	}
	st := mockState{Active: []int{}}
	for id := range m.active {
		st.Active = append(st.Active, id)
	}
	slices.Sort(st.Active)
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(m.stateFile), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(m.stateFile, data, 0o644)
}

// Partitions lists the table with each partition's state.
func (m *Mock) Partitions() ([]Partition, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.load(); err != nil {
		return nil, err
	}
	out := make([]Partition, 0, len(m.table))
	for _, p := range m.table {
		part := Partition{ID: p.ID, Active: m.active[p.ID]}
		for _, g := range p.GPUs {
			part.GPUs = append(part.GPUs, GPU{PhysicalID: g, PCIBusID: m.busIDs[g-1]})
		}
		out = append(out, part)
	}
	return out, nil
}

func (m *Mock) find(id int) (MockPartition, error) {
	for _, p := range m.table {
		if p.ID == id {
			return p, nil
		}
	}
	return MockPartition{}, fmt.Errorf("%w: partition %d: not found (FM_ST_BADPARAM)", ErrFabricManager, id)
}

// Activate activates a partition unless it shares a GPU with another active
// one (FM_ST_IN_USE).
func (m *Mock) Activate(id int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.load(); err != nil {
		return err
	}
	p, err := m.find(id)
	if err != nil {
		return err
	}
	if m.active[id] {
		return nil
	}
	for other := range m.active {
		o, err := m.find(other)
		if err != nil {
			continue
		}
		for _, g := range p.GPUs {
			if slices.Contains(o.GPUs, g) {
				return fmt.Errorf("%w: activate partition %d: GPU %d is in active partition %d (FM_ST_IN_USE)", ErrFabricManager, id, g, other)
			}
		}
	}
	m.active[id] = true
	return m.save()
}

// Deactivate deactivates a partition.
func (m *Mock) Deactivate(id int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.load(); err != nil {
		return err
	}
	if _, err := m.find(id); err != nil {
		return err
	}
	if !m.active[id] {
		return nil
	}
	delete(m.active, id)
	return m.save()
}

// ReadMockActive returns the partitions a mock's state file records as
// active, for tests that look at a node from outside.
func ReadMockActive(stateFile string) ([]int, error) {
	m := &Mock{stateFile: stateFile}
	if err := m.load(); err != nil {
		return nil, err
	}
	out := []int{}
	for id := range m.active {
		out = append(out, id)
	}
	slices.Sort(out)
	return out, nil
}
