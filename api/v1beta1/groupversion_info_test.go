package v1beta1_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

func TestAddToScheme(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1beta1.AddToScheme(scheme); err != nil {
		t.Fatalf("AddToScheme() = %v", err)
	}
	cases := map[string]struct {
		kind string
		want bool
	}{
		"ComputeDomain is a custom resource":         {kind: "ComputeDomain", want: true},
		"ComputeDomainList is registered with it":    {kind: "ComputeDomainList", want: true},
		"ComputeDomainMember is a custom resource":   {kind: "ComputeDomainMember", want: true},
		"GpuConfig is opaque, not a custom resource": {kind: v1beta1.GpuConfigKind},
		"MigDeviceConfig is opaque":                  {kind: v1beta1.MigDeviceConfigKind},
		"ComputeDomainChannelConfig is opaque":       {kind: v1beta1.ComputeDomainChannelConfigKind},
		"ComputeDomainDaemonConfig is opaque":        {kind: v1beta1.ComputeDomainDaemonConfigKind},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := scheme.Recognizes(v1beta1.GroupVersion.WithKind(tc.kind)); got != tc.want {
				t.Errorf("scheme recognizes %s = %v, want %v", tc.kind, got, tc.want)
			}
		})
	}
}
