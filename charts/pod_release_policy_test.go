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
// placement gate (gate removed, the clique's node affinity requirement ANDed into every term of the pod's own,
// placementClique annotation added, naming that clique); any other change it tries (an image, a label, a pod
// without the gate, another gate, a host of its choosing, a second clique, a finalizer, an owner) is refused
// naming the rule; other users' pod updates are not affected.
func TestPodReleasePolicy(t *testing.T) {
	const ns = "team-a"
	env, ctx := installPoliciesWith(t, []string{policyNamespace, ns}, []string{"--set", "webhook.enabled=true", "--set", "webhook.podGroups=true"},
		"templates/pod-release-policy.yaml")
	as := func(user string) kubernetes.Interface { return impersonating(t, env.Config, user) }
	admin, controller := as("admin"), as("system:serviceaccount:"+policyNamespace+":compute-domain-controller")
	own := corev1.NodeSelectorRequirement{Key: "example.com/pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"x"}}
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
	// withOwnAffinity is a held pod with node affinity of its own: two terms, one with a requirement.
	withOwnAffinity := func(name string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{v1beta1.PlacementDomainLabelKey: "gang"}},
			Spec: corev1.PodSpec{
				Containers:      []corev1.Container{{Name: "c", Image: "registry.example/train:1"}},
				SchedulingGates: []corev1.PodSchedulingGate{{Name: v1beta1.CliquePlacementGate}},
				Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{
						{MatchExpressions: []corev1.NodeSelectorRequirement{own}},
						{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "example.com/pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"y"}}}},
					},
				}}},
			},
		}
		created, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return created
	}
	cliqueReq := func(values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: v1beta1.CliqueNodeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: values}
	}
	// release is what the controller does: the clique's requirement ANDed into every term of the pod's own (one
	// term when it has none), the annotation added, our gate removed.
	release := func(p *corev1.Pod) *corev1.Pod {
		p = p.DeepCopy()
		var gates []corev1.PodSchedulingGate
		for _, g := range p.Spec.SchedulingGates {
			if g.Name != v1beta1.CliquePlacementGate {
				gates = append(gates, g)
			}
		}
		p.Spec.SchedulingGates = gates
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{}},
			}}}
		}
		terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		for i := range terms {
			terms[i].MatchExpressions = append(terms[i].MatchExpressions, cliqueReq("cluster-a.0"))
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[v1beta1.PlacementCliqueAnnotationKey] = "cluster-a.0"
		return p
	}
	update := func(c kubernetes.Interface, p *corev1.Pod) error {
		_, err := c.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
		return err
	}
	terms := func(p *corev1.Pod) []corev1.NodeSelectorTerm {
		return p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
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
	if err := update(controller, release(withOwnAffinity("own-affinity"))); err != nil {
		t.Errorf("the controller releasing a held pod with node affinity of its own, the clique ANDed into each term: %v", err)
	}
	relabel := release(heldPod("relabel", v1beta1.CliquePlacementGate))
	relabel.Labels["team"] = "b"
	wantDenied(t, "the controller relabeling a pod", update(controller, relabel), "labels, finalizers and owner references stay as they are")

	notHeld := heldPod("not-held", "example.com/other")
	wantDenied(t, "the controller removing another controller's gate", update(controller, release(notHeld)), "releases only pods held behind")

	both := heldPod("both", v1beta1.CliquePlacementGate, "example.com/other")
	both = release(both)
	both.Spec.SchedulingGates = nil
	wantDenied(t, "the controller removing the pod's other gate with ours", update(controller, both), "the pod's other gates stay")

	note := release(heldPod("note", v1beta1.CliquePlacementGate))
	note.Annotations["example.com/x"] = "y"
	wantDenied(t, "the controller adding another annotation", update(controller, note), "adds only the resource.nvidia.com/placementClique annotation")

	// A stolen token pinning a pod to a host of its choosing, or widening it past one clique.
	const affinityRule = "the controller only ANDs nvidia.com/gpu.clique In [the annotation's clique] into every term of the pod's own node affinity"
	host := release(heldPod("host", v1beta1.CliquePlacementGate))
	terms(host)[0].MatchExpressions = []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-7"}}}
	wantDenied(t, "the controller pinning a pod to a host by label", update(controller, host), affinityRule)
	hostToo := release(heldPod("host-too", v1beta1.CliquePlacementGate))
	terms(hostToo)[0].MatchExpressions = append([]corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-7"}}}, terms(hostToo)[0].MatchExpressions...)
	wantDenied(t, "the controller adding a host requirement before the clique's", update(controller, hostToo), affinityRule)
	field := release(heldPod("field", v1beta1.CliquePlacementGate))
	terms(field)[0].MatchFields = []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-7"}}}
	wantDenied(t, "the controller pinning a pod to a host by name", update(controller, field), affinityRule)
	two := release(heldPod("two", v1beta1.CliquePlacementGate))
	terms(two)[0].MatchExpressions[0] = cliqueReq("cluster-a.0", "cluster-b.0")
	wantDenied(t, "the controller naming two cliques", update(controller, two), affinityRule)
	otherClique := release(heldPod("other-clique", v1beta1.CliquePlacementGate))
	terms(otherClique)[0].MatchExpressions[0] = cliqueReq("cluster-b.0")
	wantDenied(t, "the controller pinning to another clique than the annotation names", update(controller, otherClique), affinityRule)
	// Dropping the pod's own requirement, or ORing in a term, the API server refuses itself (a gated pod's node
	// affinity may only be tightened).
	preferred := release(heldPod("preferred", v1beta1.CliquePlacementGate))
	preferred.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.PreferredSchedulingTerm{{Weight: 100,
		Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-7"}}}}}}
	wantDenied(t, "the controller adding a preferred host", update(controller, preferred), "pod affinity and preferred node affinity stay")

	// A finalizer keeps the pod forever; an owner that does not exist makes the garbage collector delete it.
	finalizer := release(heldPod("finalizer", v1beta1.CliquePlacementGate))
	finalizer.Finalizers = []string{"example.com/keep"}
	wantDenied(t, "the controller adding a finalizer", update(controller, finalizer), "labels, finalizers and owner references stay as they are")
	owner := release(heldPod("owner", v1beta1.CliquePlacementGate))
	owner.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: "0b8a1f5e-7e0f-4c5c-9a51-6a7e0e0c0c0c"}}
	wantDenied(t, "the controller setting an owner reference to a missing object", update(controller, owner), "labels, finalizers and owner references stay as they are")

	other := heldPod("other", v1beta1.CliquePlacementGate)
	other.Labels["team"] = "b"
	if err := update(admin, other); err != nil {
		t.Errorf("another user's pod update is not the policy's business: %v", err)
	}
}

// TestPlacementMarkPolicy: the placementClique annotation marks a pod the controller released, and the
// fallback counts such a pod's node against its clique until it binds: nobody but the controller's service
// account may create a pod with it, add it, change it or remove it. Other updates of a marked pod go through.
func TestPlacementMarkPolicy(t *testing.T) {
	const ns = "team-a"
	env, ctx := installPoliciesWith(t, []string{policyNamespace, ns}, []string{"--set", "webhook.enabled=true", "--set", "webhook.podGroups=true"},
		"templates/pod-release-policy.yaml")
	as := func(user string) kubernetes.Interface { return impersonating(t, env.Config, user) }
	tenant, jobController := as("alice"), as("system:serviceaccount:kube-system:job-controller")
	controller := as("system:serviceaccount:" + policyNamespace + ":compute-domain-controller")
	pod := func(name string, annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{v1beta1.PlacementDomainLabelKey: "gang"}, Annotations: annotations},
			Spec: corev1.PodSpec{
				Containers:      []corev1.Container{{Name: "c", Image: "registry.example/train:1"}},
				SchedulingGates: []corev1.PodSchedulingGate{{Name: v1beta1.CliquePlacementGate}},
			},
		}
	}
	marked := map[string]string{v1beta1.PlacementCliqueAnnotationKey: "cluster-a.0"}
	const rule = "only the operator's controller writes the resource.nvidia.com/placementClique annotation"
	tries := 0
	_ = firstDenial(t, ctx, "a tenant creating a pod that looks released", rule, func(ctx context.Context) error {
		tries++
		_, err := tenant.CoreV1().Pods(ns).Create(ctx, pod(fmt.Sprintf("forged-%d", tries), marked), metav1.CreateOptions{})
		return err
	})
	_, err := jobController.CoreV1().Pods(ns).Create(ctx, pod("from-template", marked), metav1.CreateOptions{})
	wantDenied(t, "a controller creating a pod from a template that carries the mark", err, rule)

	plain, err := tenant.CoreV1().Pods(ns).Create(ctx, pod("plain", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a tenant's pod without the mark: %v", err)
	}
	add := plain.DeepCopy()
	add.Annotations = marked
	_, err = tenant.CoreV1().Pods(ns).Update(ctx, add, metav1.UpdateOptions{})
	wantDenied(t, "a tenant adding the mark to its pod", err, rule)

	// The controller releases the pod: gate removed, clique affinity and mark added.
	released := plain.DeepCopy()
	released.Spec.SchedulingGates = nil
	released.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: v1beta1.CliqueNodeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"cluster-a.0"}},
		}}},
	}}}
	released.Annotations = marked
	if released, err = controller.CoreV1().Pods(ns).Update(ctx, released, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("the controller releasing a pod with the mark: %v", err)
	}
	moved := released.DeepCopy()
	moved.Annotations[v1beta1.PlacementCliqueAnnotationKey] = "cluster-b.0"
	_, err = tenant.CoreV1().Pods(ns).Update(ctx, moved, metav1.UpdateOptions{})
	wantDenied(t, "a tenant changing its pod's clique mark", err, rule)
	unmarked := released.DeepCopy()
	delete(unmarked.Annotations, v1beta1.PlacementCliqueAnnotationKey)
	_, err = tenant.CoreV1().Pods(ns).Update(ctx, unmarked, metav1.UpdateOptions{})
	wantDenied(t, "a tenant removing its pod's clique mark", err, rule)
	relabeled := released.DeepCopy()
	relabeled.Labels["team"] = "b"
	if _, err := tenant.CoreV1().Pods(ns).Update(ctx, relabeled, metav1.UpdateOptions{}); err != nil {
		t.Errorf("a tenant relabeling its released pod, the mark kept: %v", err)
	}
}
