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

package webhook

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
	"github.com/computedomain-operator/computedomain-operator/internal/workloadapi"
)

func TestPodGroupJoiner(t *testing.T) {
	pod := func(templates ...string) *corev1.Pod {
		p := &corev1.Pod{}
		p.Namespace = "team-a"
		for i, tmpl := range templates {
			p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: string(rune('a' + i)), ResourceClaimTemplateName: ptr.To(tmpl)})
		}
		return p
	}
	joined := func(p *corev1.Pod, group string) *corev1.Pod {
		workloadapi.JoinPodGroup(&p.Spec, group)
		return p
	}
	domains := []client.Object{
		utiltesting.MakeComputeDomain("gang", "team-a").Channel("gang-channel").NumNodes(16).Obj(),
		utiltesting.MakeComputeDomain("elastic", "team-a").Channel("elastic-channel").Obj(),
		utiltesting.MakeComputeDomain("elsewhere", "team-b").Channel("other-channel").NumNodes(4).Obj(),
	}
	cases := map[string]struct {
		pod       *corev1.Pod
		wantGroup string
	}{
		"an NVIDIA-style pod with a GPU claim and the domain's channel claim joins the domain's PodGroup": {
			pod: pod("four-gpus", "gang-channel"), wantGroup: "gang",
		},
		"a pod of a domain without numNodes gets no PodGroup, which would never come": {
			pod: pod("elastic-channel"),
		},
		"a template of a domain in another namespace is not this pod's": {
			pod: pod("other-channel"),
		},
		"a pod without a domain's template is left alone": {
			pod: pod("four-gpus"),
		},
		"a pod that names its own scheduling group keeps it": {
			pod: joined(pod("gang-channel"), "mine"), wantGroup: "mine",
		},
	}
	scheme, err := kubescheme.New()
	if err != nil {
		t.Fatal(err)
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(domains...).WithIndex(domains[0], ClaimTemplateField, ClaimTemplateOf).Build()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := tc.pod.DeepCopy()
			if err := (podGroupJoiner{domains: reader}).Default(context.Background(), p); err != nil {
				t.Fatal(err)
			}
			if got := workloadapi.PodGroupName(&p.Spec); got != tc.wantGroup {
				t.Errorf("podGroupName %q, want %q", got, tc.wantGroup)
			}
		})
	}
}
