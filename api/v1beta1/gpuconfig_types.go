package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GpuConfigKind is the kind of GpuConfig.
const GpuConfigKind = "GpuConfig"

// GpuConfig is the opaque configuration of a full GPU (driver gpu.nvidia.com). It is not a custom
// resource: it travels in a ResourceClaim's or DeviceClass's config[].opaque.parameters.
//
// +kubebuilder:object:root=true
type GpuConfig struct {
	metav1.TypeMeta `json:",inline"`

	// sharing says how the workloads holding the GPU share it; unset means no sharing setup: the GPU
	// runs with the driver's defaults.
	// +optional
	Sharing *GpuSharing `json:"sharing,omitempty"`
}

// DefaultGpuConfig returns the configuration a GPU gets when no class or claim config names it.
func DefaultGpuConfig() *GpuConfig {
	return &GpuConfig{TypeMeta: metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: GpuConfigKind}}
}
