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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
		opts          []envtest.Option
		wantServed    bool
		wantTopology  string
		wantComposite bool
	}{
		"a default 1.37 API server does not serve the Workload API": {},
		"GenericWorkload without TopologyAwareWorkloadScheduling serves PodGroups and drops their topology constraint": {
			opts:       []envtest.Option{envtest.WithWorkloadAPI("GenericWorkload")},
			wantServed: true,
		},
		"every Workload gate with CompositePodGroup serves composite groups and keeps every constraint": {
			opts:       []envtest.Option{envtest.WithWorkloadAPI()},
			wantServed: true, wantTopology: "nvidia.com/gpu.clique", wantComposite: true,
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
			composite, err := workloadapi.CompositeServed(disc)
			if err != nil {
				t.Fatal(err)
			}
			if composite != tc.wantComposite {
				t.Fatalf("CompositeServed = %v, want %v", composite, tc.wantComposite)
			}
			if composite {
				createSlicedGang(t, env)
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

// createSlicedGang has the API server validate and store a sliced gang of three slices as the controller makes
// it (Workload, CompositePodGroup, slice PodGroups), and checks what it stored.
func createSlicedGang(t *testing.T, env *envtest.Env) {
	t.Helper()
	ctx := context.Background()
	g := workloadapi.SlicedGang{
		Namespace: "default", Name: "big", TopologyKey: "nvidia.com/gpu.clique",
		Slices: []workloadapi.Slice{{Name: "big-slice-0", MinCount: 14}, {Name: "big-slice-1", MinCount: 13}, {Name: "big-slice-2", MinCount: 13}},
		Owner:  metav1.OwnerReference{APIVersion: "resource.nvidia.com/v1beta1", Kind: "ComputeDomain", Name: "big", UID: "0b3c5d6e-0000-4000-8000-000000000001"},
	}
	objs := []client.Object{g.Workload(), g.CompositePodGroup()}
	for i := range g.Slices {
		objs = append(objs, g.SlicePodGroup(i))
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	obs, err := workloadapi.ObserveComposite(objs[1])
	if err != nil {
		t.Fatal(err)
	}
	if !obs.Gang || obs.MinGroupCount != 3 {
		t.Errorf("stored CompositePodGroup %+v, want a gang of 3 groups", obs)
	}
	for i, o := range objs[2:] {
		pg, err := workloadapi.Observe(o)
		if err != nil {
			t.Fatal(err)
		}
		if !pg.Gang || pg.MinCount != g.Slices[i].MinCount || pg.TopologyKey != g.TopologyKey || workloadapi.ParentOf(o) != "big" {
			t.Errorf("stored slice PodGroup %d %+v (parent %q), want a gang of %d in one clique under big", i, pg, workloadapi.ParentOf(o), g.Slices[i].MinCount)
		}
	}
}
