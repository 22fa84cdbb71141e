package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ComputeDomainDaemonConfigKind is the kind of ComputeDomainDaemonConfig.
const ComputeDomainDaemonConfigKind = "ComputeDomainDaemonConfig"

// ComputeDomainDaemonConfig is the opaque configuration of an IMEX daemon claim (driver
// compute-domain.nvidia.com).
//
// +kubebuilder:object:root=true
type ComputeDomainDaemonConfig struct {
	metav1.TypeMeta `json:",inline"`

	// domainID is the UID of the ComputeDomain the daemon serves.
	// +required
	DomainID string `json:"domainID"`
}
