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

	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// XidGPULost is the Xid the driver logs when a GPU falls off the bus.
const XidGPULost = 79

// FabricState names a fabric state for fault injection.
type FabricState string

// Fabric states, as GpuFabricInfo.State reports them.
const (
	FabricNotStarted FabricState = "NotStarted"
	FabricInProgress FabricState = "InProgress"
	FabricCompleted  FabricState = "Completed"
)

var fabricStates = map[FabricState]uint8{
	FabricNotStarted: nvml.GPU_FABRIC_STATE_NOT_STARTED,
	FabricInProgress: nvml.GPU_FABRIC_STATE_IN_PROGRESS,
	FabricCompleted:  nvml.GPU_FABRIC_STATE_COMPLETED,
}

// InjectXid delivers an Xid critical-error event about a full GPU to every
// event set registered for EventTypeXidCriticalError on it. It returns the
// number of sets that received it.
func (m *Lib) InjectXid(gpuIndex int, xid uint64) (int, error) {
	return m.InjectMigXid(gpuIndex, nvml.NoInstanceID, nvml.NoInstanceID, xid)
}

// InjectMigXid is InjectXid attributed to a MIG instance (GPU instance and
// compute instance IDs, or NoInstanceID).
func (m *Lib) InjectMigXid(gpuIndex int, giID, ciID uint32, xid uint64) (int, error) {
	return m.InjectEvent(gpuIndex, nvml.EventTypeXidCriticalError, xid, giID, ciID)
}

// InjectEvent delivers any supported event (EventTypeXidCriticalError,
// EventTypeSingleBitEccError, EventTypeDoubleBitEccError) about a GPU to the
// event sets registered for that type, and returns how many received it.
func (m *Lib) InjectEvent(gpuIndex int, eventType, data uint64, giID, ciID uint32) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, err := m.gpu(gpuIndex)
	if err != nil {
		return 0, err
	}
	if eventType == 0 || eventType&^uint64(supportedEvents) != 0 || eventType&(eventType-1) != 0 {
		return 0, fmt.Errorf("event type %#x: want one of %#x (Xid), %#x (single-bit ECC), %#x (double-bit ECC)",
			eventType, nvml.EventTypeXidCriticalError, nvml.EventTypeSingleBitEccError, nvml.EventTypeDoubleBitEccError)
	}
	return g.emit(eventType, data, giID, ciID), nil
}

// FailEventSetCreate makes EventSetCreate return r from now on, as a driver
// without event support or out of resources does; SUCCESS heals it. Event
// sets created before are not affected.
func (m *Lib) FailEventSetCreate(r nvml.Return) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.eventSetFault = r
}

// SetGPULost marks a GPU as fallen off the bus (every call on it and its MIG
// devices then returns ERROR_GPU_IS_LOST, and an Xid 79 event is delivered)
// or brings it back (as after a reset).
func (m *Lib) SetGPULost(gpuIndex int, lost bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, err := m.gpu(gpuIndex)
	if err != nil {
		return err
	}
	m.setLost(g, lost)
	return nil
}

func (m *Lib) setLost(g *gpu, lost bool) {
	if lost && !g.lost {
		g.emit(nvml.EventTypeXidCriticalError, XidGPULost, nvml.NoInstanceID, nvml.NoInstanceID)
	}
	g.lost = lost
}

func (m *Lib) fabricGPU(gpuIndex int) (*gpu, error) {
	g, err := m.gpu(gpuIndex)
	if err != nil {
		return nil, err
	}
	if m.profile.Fabric == nil {
		return nil, fmt.Errorf("GPU %d: profile %s has no NVLink fabric", gpuIndex, m.profile.Name)
	}
	return g, nil
}

// SetFabricState sets the fabric registration state a GPU reports.
func (m *Lib) SetFabricState(gpuIndex int, state FabricState) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, err := m.fabricGPU(gpuIndex)
	if err != nil {
		return err
	}
	return g.setFabricState(state)
}

func (g *gpu) setFabricState(state FabricState) error {
	s, ok := fabricStates[state]
	if !ok {
		return fmt.Errorf("fabric state %q: allowed: %s, %s, %s", state, FabricNotStarted, FabricInProgress, FabricCompleted)
	}
	g.fabric.State = s
	return nil
}

// SetFabricDegraded sets or clears the degraded-bandwidth bit of a GPU's
// fabric health mask.
func (m *Lib) SetFabricDegraded(gpuIndex int, degraded bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, err := m.fabricGPU(gpuIndex)
	if err != nil {
		return err
	}
	g.setDegraded(degraded)
	return nil
}

func (g *gpu) setDegraded(degraded bool) {
	v := uint32(nvml.GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_FALSE)
	if degraded {
		v = nvml.GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_TRUE
	}
	const mask = uint32(nvml.GPU_FABRIC_HEALTH_MASK_WIDTH_DEGRADED_BW) << nvml.GPU_FABRIC_HEALTH_MASK_SHIFT_DEGRADED_BW
	g.fabric.HealthMask = g.fabric.HealthMask&^mask | v<<nvml.GPU_FABRIC_HEALTH_MASK_SHIFT_DEGRADED_BW
}

// SetCliqueID makes one GPU report another clique ID than its siblings, so
// the node's clique is inconsistent. nil restores the node's clique. Only
// multi-node fabrics have cliques.
func (m *Lib) SetCliqueID(gpuIndex int, id *uint32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, err := m.fabricGPU(gpuIndex)
	if err != nil {
		return err
	}
	if !m.profile.multiNode() {
		return fmt.Errorf("GPU %d: profile %s has no multi-node NVLink fabric, so no clique", gpuIndex, m.profile.Name)
	}
	g.setClique(id)
	return nil
}

func (g *gpu) setClique(id *uint32) {
	clique := g.lib.profile.Fabric.CliqueID
	if g.lib.cfg.CliqueID != nil && g.lib.profile.multiNode() {
		clique = *g.lib.cfg.CliqueID
	}
	if id != nil {
		clique = *id
	}
	g.fabric.CliqueId = clique
}

// TimeSlice returns the time slice last set on a GPU, for tests.
func (m *Lib) TimeSlice(gpuIndex int) (nvml.TimeSlice, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, err := m.gpu(gpuIndex)
	if err != nil {
		return 0, err
	}
	return g.timeSlice, nil
}
