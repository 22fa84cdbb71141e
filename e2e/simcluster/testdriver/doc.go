// Package testdriver is a small DRA kubelet plugin for the simulated cluster,
// built on k8s.io/dynamic-resource-allocation/kubeletplugin: it publishes a
// node's devices in one ResourceSlice pool, writes one CDI spec per prepared
// claim, keeps the prepared claims in a checkpoint file, and removes both on
// unprepare. It speaks the same public names as the GPU plugin (driver
// gpu.nvidia.com, device types gpu/mig, uuid/parentUUID attributes) so the
// demo manifests work with either.
package testdriver
