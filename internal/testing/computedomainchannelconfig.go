package testing

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// ComputeDomainChannelConfigWrapper builds a ComputeDomainChannelConfig.
type ComputeDomainChannelConfigWrapper struct {
	v1beta1.ComputeDomainChannelConfig
}

// MakeComputeDomainChannelConfig starts a ComputeDomainChannelConfig for the domain with UID domainID.
func MakeComputeDomainChannelConfig(domainID string) *ComputeDomainChannelConfigWrapper {
	return &ComputeDomainChannelConfigWrapper{v1beta1.ComputeDomainChannelConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: v1beta1.ComputeDomainChannelConfigKind},
		DomainID: domainID,
	}}
}

// Obj returns the built ComputeDomainChannelConfig.
func (w *ComputeDomainChannelConfigWrapper) Obj() *v1beta1.ComputeDomainChannelConfig {
	return &w.ComputeDomainChannelConfig
}

// AllocationMode sets allocationMode.
func (w *ComputeDomainChannelConfigWrapper) AllocationMode(m v1beta1.ComputeDomainAllocationMode) *ComputeDomainChannelConfigWrapper {
	w.ComputeDomainChannelConfig.AllocationMode = m
	return w
}
