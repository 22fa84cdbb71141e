package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ComputeDomainChannelConfigKind is the kind of ComputeDomainChannelConfig.
const ComputeDomainChannelConfigKind = "ComputeDomainChannelConfig"

// ComputeDomainChannelConfig is the opaque configuration of an IMEX channel claim (driver
// compute-domain.nvidia.com). The controller writes it into the workload ResourceClaimTemplate of a
// ComputeDomain.
//
// +kubebuilder:object:root=true
type ComputeDomainChannelConfig struct {
	metav1.TypeMeta `json:",inline"`

	// domainID is the UID of the ComputeDomain the channel belongs to.
	// +required
	DomainID string `json:"domainID"`

	// allocationMode is Single (the domain's channel, the default) or All (every channel of the node).
	// +optional
	AllocationMode ComputeDomainAllocationMode `json:"allocationMode,omitempty"`
}
