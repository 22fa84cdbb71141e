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

package testing

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

func TestResourceClaimWrapper(t *testing.T) {
	type device struct {
		Request, Driver, Pool, Device string
		AdminAccess                   bool
	}
	type config struct {
		Source   resourceapi.AllocationConfigSource
		Driver   string
		Requests []string
		Params   string
	}
	type view struct {
		Name, Namespace string
		UID             types.UID
		Requests        map[string]string
		Allocated       bool
		Node            string
		Devices         []device
		Configs         []config
		ReservedFor     []string
	}
	viewOf := func(c *resourceapi.ResourceClaim) view {
		v := view{Name: c.Name, Namespace: c.Namespace, UID: c.UID, Requests: map[string]string{}}
		for _, r := range c.Spec.Devices.Requests {
			v.Requests[r.Name] = r.Exactly.DeviceClassName
		}
		if a := c.Status.Allocation; a != nil {
			v.Allocated = true
			if a.NodeSelector != nil {
				f := a.NodeSelector.NodeSelectorTerms[0].MatchFields[0]
				v.Node = f.Key + " " + string(f.Operator) + " " + f.Values[0]
			}
			for _, r := range a.Devices.Results {
				v.Devices = append(v.Devices, device{r.Request, r.Driver, r.Pool, r.Device, r.AdminAccess != nil && *r.AdminAccess})
			}
			for _, cfg := range a.Devices.Config {
				v.Configs = append(v.Configs, config{cfg.Source, cfg.Opaque.Driver, cfg.Requests, string(cfg.Opaque.Parameters.Raw)})
			}
		}
		for _, r := range c.Status.ReservedFor {
			v.ReservedFor = append(v.ReservedFor, r.Resource+"/"+r.Name+"/"+string(r.UID))
		}
		return v
	}
	pod := MakePod("train-0", "team-a").UID("pod-1").Obj()
	cases := map[string]struct {
		got  *resourceapi.ResourceClaim
		want view
	}{
		"a new claim has its requests and no allocation": {
			got:  MakeResourceClaim("gpus", "team-a").UID("uid-1").Request("gpu", "gpu.nvidia.com").Obj(),
			want: view{Name: "gpus", Namespace: "team-a", UID: "uid-1", Requests: map[string]string{"gpu": "gpu.nvidia.com"}},
		},
		"Allocated without devices is an empty allocation": {
			got:  MakeResourceClaim("c", "ns").Allocated().Obj(),
			want: view{Name: "c", Namespace: "ns", Requests: map[string]string{}, Allocated: true},
		},
		"a claim allocated on a node with two devices, admin access to the second, is reserved for its pod": {
			got: MakeResourceClaim("gpus", "team-a").AllocatedOn("node-1").
				Device("gpu", "gpu.nvidia.com", "node-1", "gpu-0").
				Device("monitor", "gpu.nvidia.com", "node-1", "gpu-1").AdminAccess().
				ReservedFor(pod).Obj(),
			want: view{
				Name: "gpus", Namespace: "team-a", Requests: map[string]string{}, Allocated: true, Node: "metadata.name In node-1",
				Devices: []device{
					{"gpu", "gpu.nvidia.com", "node-1", "gpu-0", false},
					{"monitor", "gpu.nvidia.com", "node-1", "gpu-1", true},
				},
				ReservedFor: []string{"pods/train-0/pod-1"},
			},
		},
		"Config keeps a JSON string as it is and marshals a config object": {
			got: MakeResourceClaim("c", "ns").Device("channel", "compute-domain.nvidia.com", "node-1", "channel-0").
				Config(resourceapi.AllocationConfigSourceClass, "compute-domain.nvidia.com", `{"not json`, "channel").
				Config(resourceapi.AllocationConfigSourceClaim, "compute-domain.nvidia.com", MakeComputeDomainDaemonConfig("uid-cd")).Obj(),
			want: view{
				Name: "c", Namespace: "ns", Requests: map[string]string{}, Allocated: true,
				Devices: []device{{"channel", "compute-domain.nvidia.com", "node-1", "channel-0", false}},
				Configs: []config{
					{resourceapi.AllocationConfigSourceClass, "compute-domain.nvidia.com", []string{"channel"}, `{"not json`},
					{resourceapi.AllocationConfigSourceClaim, "compute-domain.nvidia.com", nil, `{"kind":"ComputeDomainDaemonConfig","apiVersion":"` + v1beta1.GroupVersion.String() + `","domainID":"uid-cd"}`},
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, viewOf(tc.got)); diff != "" {
				t.Errorf("ResourceClaim (-want +got):\n%s", diff)
			}
		})
	}
}
