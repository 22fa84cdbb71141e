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
	"errors"
	"fmt"

	"k8s.io/dynamic-resource-allocation/deviceattribute"
	"k8s.io/klog/v2"

	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// DiscoverInventory reads the node through NVML. The clique is required to be
// consistent across GPUs (an error otherwise); pcieRoot resolves the standard
// pcieRoot attribute from sysfs under hostRoot, and is left empty where it
// cannot be resolved.
func DiscoverInventory(ctx context.Context, lib nvml.Interface, hostRoot string) (Inventory, error) {
	node, err := nvml.DiscoverWithOptions(ctx, lib, nvml.DiscoverOptions{SkipLostGPUs: true})
	if err != nil {
		return Inventory{}, fmt.Errorf("discover GPUs: %w", err)
	}
	raw, err := node.CliqueID()
	clique, err := cliqueOrNone(ctx, raw, err)
	if err != nil {
		return Inventory{}, err
	}
	inv := inventoryFromNode(node, clique, func(busID string) string { return pcieRootOf(ctx, hostRoot, busID) })
	return inv, nil
}

// pcieRootOf resolves the standard pcieRoot attribute of a PCI function from
// sysfs under hostRoot, "" where it cannot be resolved.
func pcieRootOf(ctx context.Context, hostRoot, busID string) string {
	attr, err := deviceattribute.GetPCIeRootAttributeByPCIBusID(busID, deviceattribute.WithFSFromRoot(hostroot.New(hostRoot).Path("/sys")))
	if err != nil || attr.Value.StringValue == nil {
		klog.FromContext(ctx).V(4).Info("PCIe root not resolvable", "pciBusID", busID, "err", err)
		return ""
	}
	return *attr.Value.StringValue
}

// cliqueOrNone maps a clique lookup to the clique to publish. A fabric that
// is not ready yet, or GPUs that disagree, give no clique (devices without
// cliqueID, no node label): such a node must not be placed as part of an
// NVLink domain. The periodic refresh picks up the clique once it settles.
func cliqueOrNone(ctx context.Context, clique string, err error) (string, error) {
	switch {
	case err == nil:
		return clique, nil
	case errors.Is(err, nvml.ErrFabricNotReady), errors.Is(err, nvml.ErrCliqueMismatch):
		klog.FromContext(ctx).Info("No usable NVLink clique, publishing without one", "reason", err.Error())
		return "", nil
	default:
		return "", fmt.Errorf("read NVLink clique: %w", err)
	}
}

func inventoryFromNode(node *nvml.NodeInfo, clique string, pcieRoot func(string) string) Inventory {
	inv := Inventory{DriverVersion: node.DriverVersion, CUDADriverVersion: node.CUDADriverVersion, CliqueID: clique, LostGPUs: node.LostGPUs}
	for _, g := range node.GPUs {
		gpu := GPU{GPUFacts: g.GPUFacts}
		if g.PCIBusID != "" && pcieRoot != nil {
			gpu.PCIeRoot = pcieRoot(g.PCIBusID)
		}
		for _, p := range g.MIGProfiles {
			mp := MigProfile{
				Name: p.Name, GIProfileID: int(p.Info.Id), Selector: p.GIProfile, CIProfileSelector: p.CIProfile,
				Capacities: MigCapacities{
					Multiprocessors: int(p.Info.MultiprocessorCount), CopyEngines: int(p.Info.CopyEngineCount),
					Decoders: int(p.Info.DecoderCount), Encoders: int(p.Info.EncoderCount),
					JpegEngines: int(p.Info.JpegCount), OfaEngines: int(p.Info.OfaCount),
					MemoryBytes: p.Info.MemorySizeMB * 1024 * 1024,
				},
			}
			for _, pl := range p.Placements {
				mp.Placements = append(mp.Placements, MigPlacement{Start: int(pl.Start), Size: int(pl.Size)})
			}
			gpu.MigProfiles = append(gpu.MigProfiles, mp)
		}
		for _, m := range g.MIGDevices {
			gpu.MigDevices = append(gpu.MigDevices, MigDevice{
				UUID: m.UUID, Profile: m.Profile, GIProfileID: int(m.GIProfileID), GIID: int(m.GIID), CIID: int(m.CIID),
				Placement: MigPlacement{Start: int(m.Placement.Start), Size: int(m.Placement.Size)},
				Capacities: MigCapacities{
					Multiprocessors: int(m.Attributes.MultiprocessorCount), CopyEngines: int(m.Attributes.SharedCopyEngineCount),
					Decoders: int(m.Attributes.SharedDecoderCount), Encoders: int(m.Attributes.SharedEncoderCount),
					JpegEngines: int(m.Attributes.SharedJpegCount), OfaEngines: int(m.Attributes.SharedOfaCount),
					MemoryBytes: m.MemoryBytes(),
				},
			})
		}
		inv.GPUs = append(inv.GPUs, gpu)
	}
	return inv
}

// deviceByUUID returns the NVML handle of a GPU or MIG device.
func (s *nodeState) deviceByUUID(uuid string) (nvml.Device, error) {
	dev, r := s.nvml.DeviceGetHandleByUUID(uuid)
	if err := nvml.ReturnError(s.nvml, "get GPU "+uuid, r); err != nil {
		return nil, err
	}
	return dev, nil
}
