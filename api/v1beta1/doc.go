// Package v1beta1 holds the resource.nvidia.com/v1beta1 API: the ComputeDomain custom resource and the
// opaque device configuration kinds (GpuConfig, MigDeviceConfig, ComputeDomainChannelConfig,
// ComputeDomainDaemonConfig) that ResourceClaims and DeviceClasses carry in config[].opaque.parameters.
//
// The names and JSON shapes are wire-compatible with NVIDIA's DRA driver for GPUs so that existing
// manifests run unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=resource.nvidia.com
package v1beta1
