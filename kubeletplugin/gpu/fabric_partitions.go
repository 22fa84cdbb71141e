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

package gpu

import (
	"context"
	"fmt"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/fabricmanager"
)

// Fabric Manager partitions (FabricManagerPartitioning): on a node whose
// Fabric Manager runs in shared NVSwitch mode, full GPUs and vfio devices
// carry NVIDIA's attributes gpuModuleID and partition<N> (the ID of the
// N-GPU partition holding the GPU), so a claim asks for one partition with
// count: N and matchAttribute: gpu.nvidia.com/partition<N>. The GPUs of a
// claim's full-GPU and vfio devices must be exactly one partition, which is
// active while the claim is prepared: prepare records it, then activates it;
// unprepare deactivates it once no other recorded claim holds it (shares of
// one GPU in several claims). MIG devices are not part of it.

// Attribute names of Fabric Manager partitions (NVIDIA's).
const attrGPUModuleID resourceapi.QualifiedName = "gpuModuleID"

func partitionAttr(size int) resourceapi.QualifiedName {
	return resourceapi.QualifiedName(fmt.Sprintf("partition%d", size))
}

// addFabricAttributes adds a GPU's partition attributes, if it has any.
func addFabricAttributes(inv Inventory, busID string, attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) {
	m, ok := inv.Fabric[busID]
	if !ok {
		return
	}
	if m.ModuleID > 0 {
		attrs[attrGPUModuleID] = intAttr(m.ModuleID)
	}
	for size, id := range m.BySize {
		attrs[partitionAttr(size)] = intAttr(id)
	}
}

// planFabricPartition finds the partition of the claim's full-GPU and vfio
// devices and records it in their data, before anything changes.
func (s *nodeState) planFabricPartition(devices []preparedDevice) error {
	if s.fm == nil {
		return nil
	}
	var busIDs []string
	var members []int
	for i, p := range devices {
		if p.AdminAccess || (p.Data.Type != deviceTypeGpu && p.Data.Type != deviceTypeVfio) {
			continue
		}
		bus := s.physicalGPU(p.Data)
		if bus == "" {
			return fmt.Errorf("device %s: GPU without a PCI bus ID, cannot match a Fabric Manager partition", p.Name)
		}
		if !slices.Contains(busIDs, bus) {
			busIDs = append(busIDs, bus)
		}
		members = append(members, i)
	}
	if len(busIDs) == 0 {
		return nil
	}
	parts, err := s.fm.Partitions()
	if err != nil {
		return fmt.Errorf("list Fabric Manager partitions: %w", err)
	}
	slices.Sort(busIDs)
	part, err := fabricmanager.Match(parts, busIDs)
	if err != nil {
		return err
	}
	for _, i := range members {
		id := part.ID
		devices[i].Data.FabricPartition = &id
	}
	return nil
}

// claimPartition is the partition a claim's devices record, if any.
func claimPartition(devices []deviceData) (int, bool) {
	for _, d := range devices {
		if d.FabricPartition != nil {
			return *d.FabricPartition, true
		}
	}
	return 0, false
}

// activateFabricPartition activates the claim's partition (recorded at
// PrepareStarted). Fabric Manager's refusal (a partition sharing GPUs with an
// active one) fails the prepare with its reason.
func (s *nodeState) activateFabricPartition(ctx context.Context, devices []preparedDevice) error {
	data := make([]deviceData, len(devices))
	for i, p := range devices {
		data[i] = p.Data
	}
	id, ok := claimPartition(data)
	if !ok || s.fm == nil {
		return nil
	}
	if err := s.fm.Activate(id); err != nil {
		return &prepareError{reason: reasonFabric, err: fmt.Errorf("activate Fabric Manager partition %d: %w", id, err)}
	}
	klog.FromContext(ctx).V(2).Info("Activated Fabric Manager partition", "partition", id)
	s.crash.At("fm-partition-activated")
	return nil
}

// deactivateFabricPartition deactivates the partition a claim records,
// unless another recorded claim holds it too.
func (s *nodeState) deactivateFabricPartition(ctx context.Context, uid string, cs checkpoint.ClaimState) error {
	if s.fm == nil {
		return nil
	}
	id, ok := claimPartition(recordedData(cs))
	if !ok {
		return nil
	}
	for other, ocs := range s.ledger.Claims() {
		if other == uid {
			continue
		}
		if oid, ok := claimPartition(recordedData(ocs)); ok && oid == id {
			klog.FromContext(ctx).V(2).Info("Fabric Manager partition still held by another claim", "partition", id, "claimUID", other)
			return nil
		}
	}
	if err := s.fm.Deactivate(id); err != nil {
		return &prepareError{reason: reasonFabric, err: fmt.Errorf("deactivate Fabric Manager partition %d: %w", id, err)}
	}
	klog.FromContext(ctx).V(2).Info("Deactivated Fabric Manager partition", "partition", id)
	s.crash.At("unprepare-fm-partition-deactivated")
	return nil
}

// recordedData decodes the data of a claim record's devices (undecodable
// ones are left out).
func recordedData(cs checkpoint.ClaimState) []deviceData {
	var out []deviceData
	for _, dev := range cs.Devices {
		if d, err := decodeDeviceData(dev); err == nil {
			out = append(out, d)
		}
	}
	return out
}
