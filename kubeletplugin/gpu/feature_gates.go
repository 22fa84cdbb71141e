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
	"fmt"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/featuregates"
)

// The GPU plugin's feature gates, named after NVIDIA's. Their defaults differ
// from NVIDIA's (alpha, off) where this plugin's implementation is complete
// and tested: a GpuConfig that asks for time-slicing or MPS runs unchanged.
const (
	TimeSlicingSettings   = "TimeSlicingSettings"
	MPSSupport            = "MPSSupport"
	NVMLDeviceHealthCheck = "NVMLDeviceHealthCheck"
	DynamicMIG            = "DynamicMIG"
	ConsumableShares      = "ConsumableShares"
	// PassthroughSupport publishes GPUs for passthrough to VMs (vfio
	// devices, passthrough.go).
	PassthroughSupport = "PassthroughSupport"
	// FabricManagerPartitioning publishes and activates Fabric Manager
	// partitions (fabric_partitions.go).
	FabricManagerPartitioning = "FabricManagerPartitioning"
)

// FeatureGates are the gates of --feature-gates.
var FeatureGates = []featuregates.Gate{
	{Name: TimeSlicingSettings, Default: true, Doc: "GpuConfig sharing.strategy TimeSlicing (the GPU's time slice set through NVML); off: such claims are refused at prepare."},
	{Name: MPSSupport, Default: true, Doc: "GpuConfig/MigDeviceConfig sharing.strategy MPS (exclusive-process compute mode, MPS limits in the environment); off: such claims are refused at prepare."},
	{Name: NVMLDeviceHealthCheck, Default: true, Doc: "Xid events and lost-GPU probes taint unhealthy devices in the ResourceSlices; off: devices are never tainted."},
	{Name: DynamicMIG, Default: false, Doc: "partitionable MIG, as --partitionable-mig."},
	{Name: ConsumableShares, Default: false, Doc: "alpha, as NVIDIA's: --consumable-shares may publish GPUs and MIG devices for several claims at once (consumable capacity); off: --consumable-shares other than disabled is refused."},
	{Name: PassthroughSupport, Default: false, Doc: "alpha, as NVIDIA's: every GPU is also published as a vfio device (DeviceClass vfio.gpu.nvidia.com, VfioDeviceConfig) that prepare binds to vfio-pci for a VM, exclusive with the GPU's use as a GPU or MIG parent; off: no vfio devices."},
	{Name: FabricManagerPartitioning, Default: false, Doc: "alpha, as NVIDIA's: on a node with Fabric Manager in shared NVSwitch mode, GPU and vfio devices carry gpuModuleID and partition<N>, a claim's GPUs must be one partition, active while the claim is prepared; off: no partition attributes or checks."},
}

func (c Config) passthrough() bool { return c.Gates.Enabled(PassthroughSupport) }

// sharingGate is the gate a sharing strategy needs, if any.
func sharingGate(strategy apiv1beta1.SharingStrategy) string {
	switch strategy {
	case apiv1beta1.TimeSlicingStrategy:
		return TimeSlicingSettings
	case apiv1beta1.MpsStrategy:
		return MPSSupport
	}
	return ""
}

// checkSharingGate refuses a sharing strategy whose gate is off on this node.
func (s *nodeState) checkSharingGate(strategy apiv1beta1.SharingStrategy) error {
	gate := sharingGate(strategy)
	if gate == "" || s.cfg.Gates.Enabled(gate) {
		return nil
	}
	return fmt.Errorf("sharing.strategy %s needs the feature gate %s, which is off on this node (the plugin's --feature-gates, chart value featureGates.%s)", strategy, gate, gate)
}
