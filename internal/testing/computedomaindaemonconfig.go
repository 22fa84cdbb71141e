package testing

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// MakeComputeDomainDaemonConfig returns a ComputeDomainDaemonConfig for the domain with UID domainID.
// The kind has a single field, so there is no wrapper.
func MakeComputeDomainDaemonConfig(domainID string) *v1beta1.ComputeDomainDaemonConfig {
	return &v1beta1.ComputeDomainDaemonConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: v1beta1.ComputeDomainDaemonConfigKind},
		DomainID: domainID,
	}
}
