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

// Package gpu is the kubelet plugin of the gpu.nvidia.com DRA driver: it
// publishes a node's GPUs and MIG devices (static or partitionable), and with
// PassthroughSupport its GPUs for VMs (vfio devices), as ResourceSlices with
// NVLink clique topology and Fabric Manager partitions, prepares and unprepares claims
// through the NVML seam with a crash-safe checkpoint and per-claim CDI specs,
// and turns NVML health events into device taints.
//
// File map:
//   - driver.go: the kubeletplugin.DRAPlugin adapter: configuration,
//     NewDriver, the Run loop, and the kubelet's calls handed to the state.
//   - state.go: the node's state under one lock (inventory, recorded claims
//     and what preparing changes), its loading at start, and what is derived
//     from the claims; its Prepare, Unprepare and UnprepareStale are in
//     prepare.go, unprepare.go and stale_claims.go.
//   - startup_cleanup.go: at start, MIG instances, CDI specs and sharing
//     settings no recorded claim owns are removed.
//   - publish.go: the pool with health taints, and publishing it.
//   - inventory.go, inventory_nvml.go: what the node has, read from NVML
//     (and sysfs and Fabric Manager: state.go's discover).
//   - device_names.go, device_attributes.go: GPU and MIG devices as
//     resource.k8s.io devices (compatible names plus cliqueID).
//   - partitionable_mig.go: shared counters and profile/placement devices.
//   - consumable_shares.go: --consumable-shares (NVIDIA's modes): devices
//     published for several claims at once, and the rules for preparing a
//     share next to other shares.
//   - resourceslices.go: the pool, split into slices within the limits.
//   - clique_label.go: the nvidia.com/gpu.clique node label, its refresh and
//     the retries of a failed write.
//   - passthrough.go: vfio devices (PassthroughSupport) and the counters
//     that keep a GPU from being a GPU and a VM's at once.
//   - pci_bus.go, vfio_passthrough.go: the GPUs' PCI functions in sysfs, and
//     moving a GPU between nvidia and vfio-pci at prepare and unprepare (and
//     back at start for one no claim holds).
//   - fabric_partitions.go: Fabric Manager partition attributes, and the
//     claim's partition active while it is prepared.
//   - opaque_config.go: the default config of a device without one.
//   - prepare.go, unprepare.go, mig_instances.go, sharing.go, cdi_edits.go,
//     host_devices.go: the prepare and unprepare paths and their side effects.
//   - stale_claims.go: claims whose ResourceClaim is gone.
//   - health_monitor.go: Xid and lost-GPU conditions from NVML events and
//     probes, and the taints they make.
//   - health.go: KEP-4680 health reports, the devices gauge, lost-GPU
//     rediscovery.
//   - metrics.go, errors.go: Prometheus metrics and error reasons.
package gpu
