// Package gpu is the kubelet plugin of the gpu.nvidia.com DRA driver: it
// publishes a node's GPUs and MIG devices (static or partitionable) as
// ResourceSlices with NVLink clique topology, prepares and unprepares claims
// through the NVML seam with a crash-safe checkpoint and per-claim CDI specs,
// and turns NVML health events into device taints.
//
// File map: inventory.go (what the node has, read from NVML), device_names.go,
// device_attributes.go (GPU and MIG devices as resource.k8s.io devices),
// partitionable_mig.go (counters and profile/placement devices),
// resourceslices.go (pool split into slices), clique_label.go (node label),
// opaque_config.go (class then claim configs), sharing.go, prepare.go,
// unprepare.go, stale_claims.go, health.go, metrics.go, driver.go (the
// kubeletplugin.DRAPlugin).
package gpu
