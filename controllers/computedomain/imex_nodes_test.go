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

package computedomain_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/imexclique"
)

var _ = Describe("ComputeDomain controller and the long-lived IMEX daemons", Ordered, func() {
	var (
		ctx context.Context
		ns  string
	)

	BeforeEach(func() {
		ctx = context.Background()
		namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "clique-"}}
		Expect(k8s.Create(ctx, namespace)).To(Succeed())
		ns = namespace.Name
	})

	It("lists the long-lived daemons of a clique with stable indices, and forms a domain from its allocated claims without a pod of its own", func() {
		clique := "c0ffee00-0000-0000-0000-000000000001.7"
		for i := range 3 {
			applyIMEXNode(ctx, fmt.Sprintf("q7-n%d", i), clique, fmt.Sprintf("127.0.70.%d", i+1), true)
		}
		ensemble := waitForEnsemble(ctx, clique, 3)

		cd := createDomain(ctx, "on-cliques", ns)
		rct := workloadTemplate(ctx, cd)
		allocateWorkloadClaim(ctx, rct, "worker-0", "q7-n0")
		allocateWorkloadClaim(ctx, rct, "worker-1", "q7-n2")

		channels := readyChannels(ctx, cd, 2)
		Expect(channels).To(HaveKey(clique))
		got := &v1beta1.ComputeDomain{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cd), got)).To(Succeed())
		for _, n := range got.Status.Nodes {
			Expect(n.Index).To(Equal(ensemble[n.Name]), "node %s keeps its index in the clique's ensemble", n.Name)
			Expect(n.IPAddress).To(HavePrefix("127.0.70."))
		}

		By("creating no pod and no claim template of its own in the operator namespace")
		Consistently(func(g Gomega) {
			var templates resourcev1.ResourceClaimTemplateList
			g.Expect(k8s.List(ctx, &templates, client.InNamespace(operatorNamespace))).To(Succeed())
			g.Expect(templates.Items).To(BeEmpty())
			var daemons corev1.PodList
			g.Expect(k8s.List(ctx, &daemons, client.InNamespace(operatorNamespace))).To(Succeed())
			for _, p := range daemons.Items {
				g.Expect(p.Labels).To(Equal(cliqueDaemonLabels()), "pod %s is not a long-lived daemon", p.Name)
			}
		}).WithTimeout(consistently).WithPolling(poll).Should(Succeed())

		By("giving a second domain in the same clique another channel")
		other := createDomain(ctx, "next-on-cliques", ns)
		otherRCT := workloadTemplate(ctx, other)
		allocateWorkloadClaim(ctx, otherRCT, "other-0", "q7-n1")
		Expect(readyChannels(ctx, other, 1)[clique]).NotTo(Equal(channels[clique]))

		By("keeping a node whose daemon is away in the ensemble: no newcomer takes its index while the node is in the clique")
		Expect(k8s.Delete(ctx, &v1beta1.IMEXNode{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: "q7-n1"}})).To(Succeed())
		applyIMEXNode(ctx, "q7-n4", clique, "127.0.70.5", true)
		away := waitForEnsemble(ctx, clique, 4)
		Expect(away["q7-n1"]).To(Equal(ensemble["q7-n1"]), "q7-n1, whose node is still in the clique, keeps its index")
		Expect(k8s.Delete(ctx, &v1beta1.IMEXNode{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: "q7-n4"}})).To(Succeed())
		leaveClique(ctx, "q7-n4")
		waitForEnsemble(ctx, clique, 3)

		By("keeping the indices when a node leaves the clique and another joins")
		leaveClique(ctx, "q7-n1")
		waitForEnsemble(ctx, clique, 2)
		applyIMEXNode(ctx, "q7-n3", clique, "127.0.70.4", true)
		after := waitForEnsemble(ctx, clique, 3)
		Expect(after["q7-n0"]).To(Equal(ensemble["q7-n0"]))
		Expect(after["q7-n2"]).To(Equal(ensemble["q7-n2"]))
		Expect(after["q7-n3"]).To(Equal(ensemble["q7-n1"]), "the newcomer takes the freed index")
	})

	It("keeps a clique's indices across a restart of the controller: the new one reads them from the IMEXClique", func() {
		clique := "c0ffee00-0000-0000-0000-000000000001.9"
		for _, n := range []string{"q9-n2", "q9-n0", "q9-n1"} {
			applyIMEXNode(ctx, n, clique, "127.0.90."+n[len(n)-1:], true)
		}
		before := waitForEnsemble(ctx, clique, 3)
		By("removing a node, so that the lowest free index is not the newcomer's by name order")
		Expect(k8s.Delete(ctx, &v1beta1.IMEXNode{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: "q9-n0"}})).To(Succeed())
		leaveClique(ctx, "q9-n0")
		waitForEnsemble(ctx, clique, 2)
		stop()
		startController()
		applyIMEXNode(ctx, "q9-n3", clique, "127.0.90.3", true)
		after := waitForEnsemble(ctx, clique, 3)
		Expect(after["q9-n1"]).To(Equal(before["q9-n1"]))
		Expect(after["q9-n2"]).To(Equal(before["q9-n2"]))
		Expect(after["q9-n3"]).To(Equal(before["q9-n0"]), "the newcomer takes the index the restarted controller found free")
	})

	It("trusts an IMEXNode only through a long-lived daemon pod on its node: a per-domain daemon's or a forged one stays out", func() {
		clique := "c0ffee00-0000-0000-0000-000000000001.8"
		applyIMEXNode(ctx, "q8-n0", clique, "127.0.80.1", true)
		By("an IMEXNode owned by a pod without the long-lived daemons' component label")
		pod := runPod(ctx, "forger-q8-n1", "q8-n1", "127.0.80.2", map[string]string{imexclique.AppLabelKey: imexclique.AppLabelValue})
		applyIMEXNodeOwnedBy(ctx, "q8-n1", clique, "127.0.80.2", pod)
		By("an IMEXNode naming an address that is not its daemon pod's")
		good := runPod(ctx, "imex-q8-n2", "q8-n2", "127.0.80.3", cliqueDaemonLabels())
		applyIMEXNodeOwnedBy(ctx, "q8-n2", clique, "127.0.80.99", good)

		Consistently(func(g Gomega) {
			q := &v1beta1.IMEXClique{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: v1beta1.IMEXCliqueName(clique)}, q)).To(Succeed())
			g.Expect(q.Status.Nodes).To(HaveLen(1))
			g.Expect(q.Status.Nodes[0].Name).To(Equal("q8-n0"))
		}).WithTimeout(consistently).WithPolling(poll).Should(Succeed())

		cd := createDomain(ctx, "forged", ns)
		rct := workloadTemplate(ctx, cd)
		allocateWorkloadClaim(ctx, rct, "w-0", "q8-n1")
		Eventually(func(g Gomega) {
			got := getDomain(g, ctx, cd)
			g.Expect(got.Status.Status).To(Equal(v1beta1.ComputeDomainStatusNotReady))
			g.Expect(condition(got, v1beta1.ComputeDomainConditionDaemonsReady).Message).To(ContainSubstring("no long-lived IMEX daemon reports for node q8-n1"))
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
	})
})

var _ = Describe("ComputeDomain controller on a node without a fabric", Ordered, func() {
	It("forms a domain on a node without a clique label and no long-lived daemon, as NoFabric", func() {
		ctx := context.Background()
		namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "hgx-"}}
		Expect(k8s.Create(ctx, namespace)).To(Succeed())
		Expect(k8s.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "hgx-0", Labels: map[string]string{"nvidia.com/gpu.present": "true"}}})).To(Succeed())
		cd := createDomain(ctx, "no-fabric", namespace.Name)
		rct := workloadTemplate(ctx, cd)
		allocateWorkloadClaim(ctx, rct, "hgx-pod", "hgx-0")
		Eventually(func(g Gomega) {
			got := getDomain(g, ctx, cd)
			g.Expect(got.Status.Status).To(Equal(v1beta1.ComputeDomainStatusReady))
			g.Expect(condition(got, v1beta1.ComputeDomainConditionReady).Reason).To(Equal(v1beta1.ComputeDomainReasonNoFabric))
			g.Expect(got.Status.Nodes).To(HaveLen(1))
			g.Expect(got.Status.Nodes[0].CliqueID).To(BeEmpty())
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
	})
})

// cliqueDaemonLabels are the labels of the chart's long-lived IMEX daemon pods.
func cliqueDaemonLabels() map[string]string {
	return map[string]string{imexclique.AppLabelKey: imexclique.AppLabelValue, imexclique.ComponentLabelKey: imexclique.ComponentLabelValue}
}

// applyIMEXNode runs a long-lived daemon pod on node at ip and writes its IMEXNode as the daemon does.
// leaveClique takes the node out of its NVLink clique, as removing its tray does: its Node goes.
func leaveClique(ctx context.Context, node string) {
	GinkgoHelper()
	Expect(client.IgnoreNotFound(k8s.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}))).To(Succeed())
}

func applyIMEXNode(ctx context.Context, node, clique, ip string, ready bool) {
	GinkgoHelper()
	pod := runPod(ctx, "imex-"+node, node, ip, cliqueDaemonLabels())
	applyIMEXNodeOwnedBy(ctx, node, clique, ip, pod)
	if ready {
		status := map[string]any{"ready": true, "conditions": []any{
			map[string]any{"type": v1beta1.IMEXNodeConditionIMEXReady, "status": "True", "reason": "Ready", "message": "IMEX answers READY", "lastTransitionTime": metav1.Now().UTC().Format("2006-01-02T15:04:05Z")},
		}}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1beta1.GroupVersion.String(), "kind": "IMEXNode",
			"metadata": map[string]any{"name": node, "namespace": operatorNamespace},
			"status":   status,
		}}
		Expect(k8s.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(v1beta1.IMEXNodeFieldOwner), client.ForceOwnership)).To(Succeed())
	}
}

// applyIMEXNodeOwnedBy writes the spec of node's IMEXNode, owned by pod.
func applyIMEXNodeOwnedBy(ctx context.Context, node, clique, ip string, pod *corev1.Pod) {
	GinkgoHelper()
	labelNodeClique(ctx, node, clique)
	n := &v1beta1.IMEXNode{
		TypeMeta: metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "IMEXNode"},
		ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: operatorNamespace,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}}},
		Spec: v1beta1.IMEXNodeSpec{NodeName: node, IPAddress: ip, CliqueID: clique},
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(n)
	Expect(err).NotTo(HaveOccurred())
	obj := &unstructured.Unstructured{Object: u}
	unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(obj.Object, "status")
	Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(v1beta1.IMEXNodeFieldOwner), client.ForceOwnership)).To(Succeed())
}

// runPod stands in for a DaemonSet controller and the kubelet: a pod in the operator namespace on node with ip.
func runPod(ctx context.Context, name, node, ip string, labels map[string]string) *corev1.Pod {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: name, Labels: labels},
		Spec: corev1.PodSpec{NodeName: node, AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "imex", Image: "daemon:test"}}},
	}
	Expect(k8s.Create(ctx, pod)).To(Succeed())
	pod.Status.PodIP = ip
	pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
	return pod
}

// waitForEnsemble waits until the clique's IMEXClique lists nodes nodes and returns their indices.
func waitForEnsemble(ctx context.Context, clique string, nodes int) map[string]int32 {
	GinkgoHelper()
	indices := map[string]int32{}
	Eventually(func(g Gomega) {
		q := &v1beta1.IMEXClique{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: v1beta1.IMEXCliqueName(clique)}, q)).To(Succeed())
		g.Expect(q.Spec.CliqueID).To(Equal(clique))
		g.Expect(q.Status.Nodes).To(HaveLen(nodes))
		clear(indices)
		for _, n := range q.Status.Nodes {
			indices[n.Name] = n.Index
		}
	}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
	return indices
}

// workloadTemplate waits for the workload claim template the controller makes for cd and returns it.
func workloadTemplate(ctx context.Context, cd *v1beta1.ComputeDomain) *resourcev1.ResourceClaimTemplate {
	GinkgoHelper()
	rct := &resourcev1.ResourceClaimTemplate{}
	Eventually(func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: cd.Namespace, Name: cd.Spec.Channel.ResourceClaimTemplate.Name}, rct)
	}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
	return rct
}
