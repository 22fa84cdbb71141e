// Package gpu is the kubelet plugin of the gpu.nvidia.com DRA driver: it
// publishes a node's GPUs and MIG devices (static or partitionable) as
// ResourceSlices with NVLink clique topology, prepares and unprepares claims
// through the NVML seam with a crash-safe checkpoint and per-claim CDI specs,
// and turns NVML health events into device taints.
//
// File map:
//   - inventory.go, inventory_nvml.go: what the node has, read from NVML.
//   - device_names.go, device_attributes.go: GPU and MIG devices as
//     resource.k8s.io devices (compatible names plus cliqueID).
//   - partitionable_mig.go: shared counters and profile/placement devices.
//   - resourceslices.go: the pool, split into slices within the limits.
//   - clique_label.go: the nvidia.com/gpu.clique node label and refresh.
//   - opaque_config.go: class then claim configs, strict, per device type.
//   - prepare.go, unprepare.go, mig_instances.go, sharing.go, cdi_edits.go,
//     host_devices.go: the prepare and unprepare paths and their side effects.
//   - stale_claims.go: claims whose ResourceClaim is gone.
//   - health.go: Xid and lost-GPU conditions, taints, recovery.
//   - metrics.go, errors.go: Prometheus metrics and error reasons.
//   - driver.go: the kubeletplugin.DRAPlugin, start-up and Run loop.
package gpu
