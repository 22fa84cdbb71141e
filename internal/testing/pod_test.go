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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

func TestPodWrapper(t *testing.T) {
	type view struct {
		Name, Namespace, Node string
		UID                   types.UID
		Labels                map[string]string
		Claims                map[string]string
		ContainerClaims       []string
		Gates                 []string
		Phase                 corev1.PodPhase
	}
	viewOf := func(p *corev1.Pod) view {
		v := view{Name: p.Name, Namespace: p.Namespace, Node: p.Spec.NodeName, UID: p.UID, Labels: p.Labels, Claims: map[string]string{}, Phase: p.Status.Phase}
		for _, c := range p.Spec.ResourceClaims {
			v.Claims[c.Name] = *c.ResourceClaimTemplateName
		}
		for _, c := range p.Spec.Containers[0].Resources.Claims {
			v.ContainerClaims = append(v.ContainerClaims, c.Name)
		}
		for _, g := range p.Spec.SchedulingGates {
			v.Gates = append(v.Gates, g.Name)
		}
		return v
	}
	cases := map[string]struct {
		got  *corev1.Pod
		want view
	}{
		"a new pod has one container and nothing else": {
			got:  MakePod("p", "ns").Obj(),
			want: view{Name: "p", Namespace: "ns", Claims: map[string]string{}},
		},
		"a gated worker of a domain uses its channel claim from the template": {
			got: MakePod("worker-0", "team-a").UID("pod-1").Labels(map[string]string{"app": "train"}).Labels(map[string]string{"rank": "0"}).
				ResourceClaim("channel", "job-channel").SchedulingGates(v1beta1.CliquePlacementGate).Obj(),
			want: view{
				Name: "worker-0", Namespace: "team-a", UID: "pod-1", Labels: map[string]string{"app": "train", "rank": "0"},
				Claims: map[string]string{"channel": "job-channel"}, ContainerClaims: []string{"channel"}, Gates: []string{v1beta1.CliquePlacementGate},
			},
		},
		"a running pod is bound to its node": {
			got:  MakePod("p", "ns").Node("node-1").Phase(corev1.PodRunning).Obj(),
			want: view{Name: "p", Namespace: "ns", Node: "node-1", Claims: map[string]string{}, Phase: corev1.PodRunning},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, viewOf(tc.got)); diff != "" {
				t.Errorf("Pod (-want +got):\n%s", diff)
			}
		})
	}
}
