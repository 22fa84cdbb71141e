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

package suite

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"
)

// replicaTimeout covers the Deployment's replacement of a lost replica: scheduling, claim allocation, a daemon on
// the new node and its joining the ensemble.
const replicaTimeout = 2 * time.Minute

// servingPods are the Deployment's pods that are not being deleted.
func servingPods(ctx SpecContext, g Gomega, ns string) []corev1.Pod {
	pods, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=serving"})
	g.Expect(err).NotTo(HaveOccurred())
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	return live
}

var _ = Describe("A ComputeDomain whose node is lost mid-job", Serial, func() {
	It("gets the replacement replica on another tray of the rack with the same channel, and is Ready again without the lost node, served by the long-lived IMEX daemons of the kept and the new node", func(ctx SpecContext) {
		requireSimulated("stopping a node agent")
		ns := newNamespace(ctx)
		createFixture(ctx, ns, "demo/computedomain-deployment.yaml")
		uid := waitForReadyDomainOfNodes(ctx, ns, "serving", 2)
		var cd cdv1beta1.ComputeDomain
		Expect(env.crClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "serving"}, &cd)).To(Succeed())
		Expect(cd.Status.Cliques).To(HaveLen(1))
		channel := *cd.Status.Cliques[0].Channel
		var pods []corev1.Pod
		Eventually(ctx, func(g Gomega) {
			pods = servingPods(ctx, g, ns)
			g.Expect(pods).To(HaveLen(2))
			for _, p := range pods {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
			}
		}).WithTimeout(podStartTimeout).Should(Succeed())
		lost, kept := pods[0], pods[1]

		By("losing node " + lost.Spec.NodeName + ": its agent stops, the node is cordoned, the replica on it force-deleted as taint eviction would")
		Expect(env.client.CoreV1().Nodes().Patch(ctx, lost.Spec.NodeName, types.MergePatchType,
			[]byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})).Error().NotTo(HaveOccurred())
		Expect(env.sim.StopNodeAgent(lost.Spec.NodeName)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { removeLostNode(ctx, lost.Spec.NodeName) })
		Expect(env.client.CoreV1().Pods(ns).Delete(ctx, lost.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})).To(Succeed())

		By("waiting for the replacement replica to run on another tray of the same rack")
		var replacement corev1.Pod
		Eventually(ctx, func(g Gomega) {
			now := servingPods(ctx, g, ns)
			g.Expect(now).To(HaveLen(2))
			for _, p := range now {
				if p.UID != kept.UID {
					replacement = p
				}
			}
			g.Expect(replacement.UID).NotTo(BeEmpty())
			g.Expect(replacement.Status.Phase).To(Equal(corev1.PodRunning))
		}).WithTimeout(replicaTimeout).WithPolling(200*time.Millisecond).Should(Succeed(), func() string { return podsSummary(ctx, ns) })
		Expect(replacement.Spec.NodeName).NotTo(Equal(lost.Spec.NodeName))
		lostNode, keptNode, newNode := nodeLabels(ctx, lost.Spec.NodeName), nodeLabels(ctx, kept.Spec.NodeName), nodeLabels(ctx, replacement.Spec.NodeName)
		Expect(newNode[topology.CliqueLabel]).To(Equal(keptNode[topology.CliqueLabel]), "the replacement is in the domain's clique")
		Expect(lostNode[topology.CliqueLabel]).To(Equal(keptNode[topology.CliqueLabel]))
		if simulatedChecks("recorded CDI edits") {
			Expect(imexChannels(ctx, &replacement, "ctr")).To(Equal([]string{fmt.Sprintf("channel%d", channel)}), "the replacement gets the domain's channel")
		}

		By("waiting for the domain to be Ready with the kept and the new node, and without the lost one")
		Eventually(ctx, func(g Gomega) {
			var cd cdv1beta1.ComputeDomain
			g.Expect(env.crClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "serving"}, &cd)).To(Succeed())
			g.Expect(cd.UID).To(Equal(uid))
			g.Expect(cd.Status.Status).To(Equal(cdv1beta1.ComputeDomainStatusReady), func() string { return fmt.Sprintf("%+v", cd.Status) })
			var names []string
			for _, n := range cd.Status.Nodes {
				names = append(names, n.Name)
			}
			g.Expect(names).To(ConsistOf(kept.Spec.NodeName, replacement.Spec.NodeName))
			g.Expect(*cd.Status.Cliques[0].Channel).To(Equal(channel), "the domain keeps its channel")
			distinctIndices(g, &cd)
			expectServedByCliqueDaemons(ctx, g, ns, "serving")
		}).WithTimeout(replicaTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	})
})

func nodeLabels(ctx SpecContext, name string) map[string]string {
	node, err := env.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return node.Labels
}

// removeLostNode takes a node whose agent was stopped out of the cluster: powered off (its containers end with
// it; left running they would be zombies the API server no longer authenticates), its Node deleted and its pods
// force-deleted as the pod garbage collector does (a DaemonSet rollout of a later spec would otherwise wait for
// ever on a pod that no kubelet terminates).
func removeLostNode(ctx SpecContext, name string) {
	Expect(env.sim.RemoveNode(ctx, name)).To(Succeed())
}
