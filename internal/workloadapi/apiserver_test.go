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

package workloadapi_test

import (
	"context"
	"testing"

	"k8s.io/client-go/discovery"

	"github.com/computedomain-operator/computedomain-operator/internal/testing/envtest"
	"github.com/computedomain-operator/computedomain-operator/internal/workloadapi"
)

// TestAgainstKubeAPIServer asks real 1.37 API servers what the controller asks them: whether PodGroups are
// served, and whether a PodGroup's topology constraint is kept, for each way a cluster can be configured.
// (The API server with every Workload gate on is the ComputeDomain controller's envtest suite.)
func TestAgainstKubeAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver")
	}
	cases := map[string]struct {
		opts         []envtest.Option
		wantServed   bool
		wantTopology string
	}{
		"a default 1.37 API server does not serve the Workload API": {},
		"GenericWorkload without TopologyAwareWorkloadScheduling serves PodGroups and drops their topology constraint": {
			opts:       []envtest.Option{envtest.WithWorkloadAPI("GenericWorkload")},
			wantServed: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			env, err := envtest.Start(tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := env.Stop(); err != nil {
					t.Error(err)
				}
			})
			disc, err := discovery.NewDiscoveryClientForConfig(env.Config)
			if err != nil {
				t.Fatal(err)
			}
			served, err := workloadapi.Served(disc)
			if err != nil {
				t.Fatal(err)
			}
			if served != tc.wantServed {
				t.Fatalf("Served = %v, want %v", served, tc.wantServed)
			}
			if !served {
				return
			}
			pg := workloadapi.Gang{Namespace: "default", Name: "g", MinCount: 4, TopologyKey: "nvidia.com/gpu.clique"}.PodGroup()
			if err := env.Client.Create(context.Background(), pg); err != nil {
				t.Fatal(err)
			}
			obs, err := workloadapi.Observe(pg)
			if err != nil {
				t.Fatal(err)
			}
			if !obs.Gang || obs.MinCount != 4 || obs.TopologyKey != tc.wantTopology {
				t.Errorf("stored PodGroup %+v, want a gang of 4 with topology key %q", obs, tc.wantTopology)
			}
		})
	}
}
