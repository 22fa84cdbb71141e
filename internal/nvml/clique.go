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

package nvml

import (
	"errors"
	"fmt"
)

// FabricInfo is a GPU's NVLink fabric registration, decoded.
type FabricInfo struct {
	// Supported is false on GPUs without multi-node NVLink (HGX, PCIe).
	Supported bool
	// ClusterUUID is the NVLink domain's UUID ("" when zero).
	ClusterUUID string
	CliqueID    uint32
	// State is one of the GPU_FABRIC_STATE_* values.
	State uint8
	// Status is the result of the registration once State is COMPLETED.
	Status Return
	// Degraded reports reduced NVLink bandwidth (health mask).
	Degraded bool
}

// StateName returns "NotSupported", "NotStarted", "InProgress" or "Completed".
func (f FabricInfo) StateName() string {
	return FabricStateName(f.State)
}

// FabricStateName names a GPU_FABRIC_STATE_* value.
func FabricStateName(s uint8) string {
	switch s {
	case GPU_FABRIC_STATE_NOT_SUPPORTED:
		return "NotSupported"
	case GPU_FABRIC_STATE_NOT_STARTED:
		return "NotStarted"
	case GPU_FABRIC_STATE_IN_PROGRESS:
		return "InProgress"
	case GPU_FABRIC_STATE_COMPLETED:
		return "Completed"
	}
	return fmt.Sprintf("Unknown(%d)", s)
}

// Clique returns "<clusterUUID>.<cliqueId>", or "" when the GPU is not part
// of a multi-node NVLink domain. It fails with ErrFabricNotReady while the
// fabric manager has not completed the GPU's registration.
func (f FabricInfo) Clique() (string, error) {
	if !f.Supported {
		return "", nil
	}
	if f.State != GPU_FABRIC_STATE_COMPLETED {
		return "", fmt.Errorf("fabric state is %s, want Completed: %w", f.StateName(), ErrFabricNotReady)
	}
	if f.Status != SUCCESS {
		return "", fmt.Errorf("fabric registration failed with nvml return %d: %w", int32(f.Status), ErrFabricNotReady)
	}
	if f.ClusterUUID == "" {
		return "", nil
	}
	return fmt.Sprintf("%s.%d", f.ClusterUUID, f.CliqueID), nil
}

// ErrFabricNotReady is wrapped when a GPU's fabric registration is not
// (yet) complete: retry later.
var ErrFabricNotReady = errors.New("NVLink fabric not ready")

// ErrCliqueMismatch is wrapped when the GPUs of a node report different
// cliques: the node cannot join a ComputeDomain.
var ErrCliqueMismatch = errors.New("GPUs disagree on the NVLink clique")

func describeFabric(lib Interface, index int, dev Device) (FabricInfo, error) {
	info, r := dev.GetGpuFabricInfo()
	switch r {
	case SUCCESS:
	case ERROR_NOT_SUPPORTED, ERROR_FUNCTION_NOT_FOUND:
		return FabricInfo{}, nil
	default:
		return FabricInfo{}, ReturnError(lib, fmt.Sprintf("GPU %d: get fabric info", index), r)
	}
	if info.State == GPU_FABRIC_STATE_NOT_SUPPORTED {
		return FabricInfo{}, nil
	}
	out := FabricInfo{
		Supported: true,
		CliqueID:  info.CliqueId,
		State:     info.State,
		Status:    Return(info.Status),
		Degraded: (info.HealthMask>>GPU_FABRIC_HEALTH_MASK_SHIFT_DEGRADED_BW)&GPU_FABRIC_HEALTH_MASK_WIDTH_DEGRADED_BW ==
			GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_TRUE,
	}
	if info.ClusterUuid != [16]uint8{} {
		out.ClusterUUID = FormatClusterUUID(info.ClusterUuid)
	}
	return out, nil
}

// CliqueID returns the node's clique "<clusterUUID>.<cliqueId>", "" when no
// GPU is in a multi-node NVLink domain, an error wrapping ErrFabricNotReady
// while registration is incomplete, and one wrapping ErrCliqueMismatch when
// the GPUs disagree (including some GPUs in a clique and some not).
func (n *NodeInfo) CliqueID() (string, error) {
	return CliqueID(n.GPUs)
}

// CliqueID is NodeInfo.CliqueID over a list of GPUs.
func CliqueID(gpus []GPUInfo) (string, error) {
	clique, first := "", -1
	for i, g := range gpus {
		c, err := g.Fabric.Clique()
		if err != nil {
			return "", fmt.Errorf("GPU %d (%s): %w", g.Index, g.UUID, err)
		}
		if first < 0 {
			clique, first = c, i
			continue
		}
		if c != clique {
			return "", fmt.Errorf("GPU %d reports clique %q but GPU %d reports %q: %w",
				gpus[first].Index, clique, g.Index, c, ErrCliqueMismatch)
		}
	}
	return clique, nil
}

// NodeCliqueID reads just the fabric info of every GPU and returns the
// node's clique, for the compute-domain plugin and daemon that need nothing
// else. Errors are those of CliqueID, or NVML errors (ErrGPULost, ...).
func NodeCliqueID(lib Interface) (string, error) {
	count, r := lib.DeviceGetCount()
	if err := ReturnError(lib, "get device count", r); err != nil {
		return "", err
	}
	gpus := make([]GPUInfo, 0, count)
	for i := 0; i < count; i++ {
		dev, r := lib.DeviceGetHandleByIndex(i)
		if err := ReturnError(lib, fmt.Sprintf("get GPU %d", i), r); err != nil {
			return "", err
		}
		uuid, r := dev.GetUUID()
		if err := ReturnError(lib, fmt.Sprintf("GPU %d: get UUID", i), r); err != nil {
			return "", err
		}
		f, err := describeFabric(lib, i, dev)
		if err != nil {
			return "", err
		}
		gpus = append(gpus, GPUInfo{GPUFacts: GPUFacts{Index: i, UUID: uuid}, Fabric: f})
	}
	return CliqueID(gpus)
}
