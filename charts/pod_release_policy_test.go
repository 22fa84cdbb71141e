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

package charts

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// TestPodReleasePolicy: the controller's service account may update a pod only to release it from the clique
// placement gate (gate removed, node affinity tightened, placementClique annotation added); any other change it
// tries (an image, a label, a pod without the gate, another gate) is refused naming the rule; other users' pod
// updates are not affected.
func TestPodReleasePolicy(t *testing.T) {
	const ns = "team-a"
	env, ctx := installPoliciesWith(t, []string{policyNamespace, ns}, []string{"--set", "webhook.enabled=true", "--set", "webhook.podGroups=true"},
		"templates/pod-release-policy.yaml")
	as := func(user string) kubernetes.Interface { return impersonating(t, env.Config, user) }
	admin, controller := as("admin"), as("system:serviceaccount:"+policyNamespace+":compute-domain-controller")
	heldPod := func(name string, gates ...string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{v1beta1.PlacementDomainLabelKey: "gang"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/train:1"}}},
		}
		for _, g := range gates {
			p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: g})
		}
		created, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return created
	}
	release := func(p *corev1.Pod) *corev1.Pod {
		p = p.DeepCopy()
		var gates []corev1.PodSchedulingGate
		for _, g := range p.Spec.SchedulingGates {
			if g.Name != v1beta1.CliquePlacementGate {
				gates = append(gates, g)
			}
		}
		p.Spec.SchedulingGates = gates
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: v1beta1.CliqueNodeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"cluster-a.0"}},
			}}},
		}}}
		p.Annotations = map[string]string{v1beta1.PlacementCliqueAnnotationKey: "cluster-a.0"}
		return p
	}
	update := func(c kubernetes.Interface, p *corev1.Pod) error {
		_, err := c.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
		return err
	}

	// An image swap is what a stolen controller token would try: refused, naming the rule.
	// A fresh pod each try: a try before the API server enforces the policy goes through.
	tries := 0
	_ = firstDenial(t, ctx, "the controller changing a held pod's image", "containers, init containers", func(ctx context.Context) error {
		tries++
		swap := release(heldPod(fmt.Sprintf("swap-%d", tries), v1beta1.CliquePlacementGate))
		swap.Spec.Containers[0].Image = "registry.example/miner:1"
		return update(controller, swap)
	})

	if err := update(controller, release(heldPod("ok", v1beta1.CliquePlacementGate, "example.com/other"))); err != nil {
		t.Errorf("the controller releasing a held pod into its clique, its other gate kept: %v", err)
	}
	relabel := release(heldPod("relabel", v1beta1.CliquePlacementGate))
	relabel.Labels["team"] = "b"
	wantDenied(t, "the controller relabeling a pod", update(controller, relabel), "labels stay as they are")

	notHeld := heldPod("not-held", "example.com/other")
	wantDenied(t, "the controller removing another controller's gate", update(controller, release(notHeld)), "releases only pods held behind")

	both := heldPod("both", v1beta1.CliquePlacementGate, "example.com/other")
	both = release(both)
	both.Spec.SchedulingGates = nil
	wantDenied(t, "the controller removing the pod's other gate with ours", update(controller, both), "the pod's other gates stay")

	note := release(heldPod("note", v1beta1.CliquePlacementGate))
	note.Annotations["example.com/x"] = "y"
	wantDenied(t, "the controller adding another annotation", update(controller, note), "adds only the resource.nvidia.com/placementClique annotation")

	other := heldPod("other", v1beta1.CliquePlacementGate)
	other.Labels["team"] = "b"
	if err := update(admin, other); err != nil {
		t.Errorf("another user's pod update is not the policy's business: %v", err)
	}
}
