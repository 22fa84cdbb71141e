package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MigDeviceConfigKind is the kind of MigDeviceConfig.
const MigDeviceConfigKind = "MigDeviceConfig"

// MigDeviceConfig is the opaque configuration of a MIG device (driver gpu.nvidia.com). It is not a
// custom resource: it travels in a ResourceClaim's or DeviceClass's config[].opaque.parameters.
//
// +kubebuilder:object:root=true
type MigDeviceConfig struct {
	metav1.TypeMeta `json:",inline"`

	// sharing says how the workloads holding the MIG device share it; unset means no sharing setup.
	// +optional
	Sharing *MigDeviceSharing `json:"sharing,omitempty"`
}

// DefaultMigDeviceConfig returns the configuration a MIG device gets when no class or claim config names it.
func DefaultMigDeviceConfig() *MigDeviceConfig {
	return &MigDeviceConfig{TypeMeta: metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: MigDeviceConfigKind}}
}
