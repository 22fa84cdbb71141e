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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
)

// controllerPods are the running pods of the chart's controller Deployment.
func controllerPods(ctx SpecContext, g Gomega) []corev1.Pod {
	pods, err := env.client.CoreV1().Pods(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=compute-domain-controller",
	})
	g.Expect(err).NotTo(HaveOccurred())
	var running []corev1.Pod
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running = append(running, p)
		}
	}
	return running
}

var _ = Describe("The ComputeDomain controller restarted while a domain forms", func() {
	It("is replaced by its Deployment, and the new controller finishes the domain: distinct indices from the clique's ensemble, one channel, served by the nodes' long-lived IMEX daemons", func(ctx SpecContext) {
		requireSimulated("the controller's pod of the chart's install")
		var old []corev1.Pod
		Eventually(ctx, func(g Gomega) {
			old = controllerPods(ctx, g)
			g.Expect(old).To(HaveLen(1))
		}).WithTimeout(podStartTimeout).Should(Succeed())

		var daemons map[types.UID]string
		Eventually(ctx, func(g Gomega) { daemons = imexDaemonPods(ctx, g) }).Should(Succeed())
		ns := newNamespace(ctx)
		By("creating a 2-pod ComputeDomain workload and at once deleting the controller's pod")
		createFixture(ctx, ns, "demo/computedomain-pods.yaml")
		Expect(env.client.CoreV1().Pods(simcluster.OperatorNamespace).Delete(ctx, old[0].Name, metav1.DeleteOptions{})).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			now := controllerPods(ctx, g)
			g.Expect(now).To(HaveLen(1))
			g.Expect(now[0].UID).NotTo(Equal(old[0].UID), "a new controller pod")
		}).WithTimeout(podStartTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())

		By("waiting for the domain to be Ready under the new controller")
		uid := waitForReadyDomainOfNodes(ctx, ns, "imex-pods", 2)
		Eventually(ctx, func(g Gomega) { expectServedByCliqueDaemons(ctx, g, ns, "imex-pods") }).WithTimeout(podStartTimeout).Should(Succeed())
		Consistently(ctx, func(g Gomega) {
			var cd cdv1beta1.ComputeDomain
			g.Expect(env.crClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "imex-pods"}, &cd)).To(Succeed())
			g.Expect(cd.Status.Status).To(Equal(cdv1beta1.ComputeDomainStatusReady))
			distinctIndices(g, &cd)
			g.Expect(cd.Status.Cliques).To(HaveLen(1))
			g.Expect(cd.Status.Cliques[0].Channel).NotTo(BeNil())
			expectServedByCliqueDaemons(ctx, g, ns, "imex-pods")
			expectNoPerDomainObjects(ctx, g, uid)
			g.Expect(imexDaemonPods(ctx, g)).To(Equal(daemons), "no IMEX daemon pod started or replaced for the domain")
		}).WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	})
})
