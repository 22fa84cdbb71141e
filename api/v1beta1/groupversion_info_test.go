// Copyright The computedomain-operator Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

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
		"ComputeDomain is a custom resource":                                {kind: "ComputeDomain", want: true},
		"ComputeDomainList is registered with it":                           {kind: "ComputeDomainList", want: true},
		"IMEXNode is a custom resource":                                     {kind: "IMEXNode", want: true},
		"IMEXClique is a custom resource":                                   {kind: "IMEXClique", want: true},
		"ComputeDomainMember, of the retired per-domain IMEX mode, is gone": {kind: "ComputeDomainMember"},
		"GpuConfig is opaque, not a custom resource":                        {kind: v1beta1.GpuConfigKind},
		"MigDeviceConfig is opaque":                                         {kind: v1beta1.MigDeviceConfigKind},
		"ComputeDomainChannelConfig is opaque":                              {kind: v1beta1.ComputeDomainChannelConfigKind},
		"ComputeDomainDaemonConfig is opaque":                               {kind: v1beta1.ComputeDomainDaemonConfigKind},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := scheme.Recognizes(v1beta1.GroupVersion.WithKind(tc.kind)); got != tc.want {
				t.Errorf("scheme recognizes %s = %v, want %v", tc.kind, got, tc.want)
			}
		})
	}
}
