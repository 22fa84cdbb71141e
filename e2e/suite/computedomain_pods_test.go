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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"
)

var _ = Describe("The two-pod ComputeDomain demo and the no-fabric one", func() {
	It("are served by the nodes' long-lived IMEX daemons: Ready with a channel per clique (channel 0 free), no channel without a fabric, and no daemon pod of their own", func(ctx SpecContext) {
		var daemons map[types.UID]string
		Eventually(ctx, func(g Gomega) { daemons = imexDaemonPods(ctx, g) }).Should(Succeed())
		ns := newNamespace(ctx)
		By("running the two-pod ComputeDomain demo unchanged")
		createFixture(ctx, ns, "demo/computedomain-pods.yaml")
		uid := waitForReadyDomainOfNodes(ctx, ns, "imex-pods", 2)
		var channels []string
		for _, name := range []string{"imex-pod-0", "imex-pod-1"} {
			pod := runningPod(ctx, ns, name)
			got := imexChannels(ctx, pod, pod.Spec.Containers[0].Name)
			Expect(got).To(HaveLen(1), "pod %s sees exactly its domain's channel", name)
			Expect(got[0]).NotTo(HaveSuffix("channel0"), "channel 0 stays free")
			channels = append(channels, got[0])
		}
		var cd cdv1beta1.ComputeDomain
		Expect(computeDomains().Get(ctx, client.ObjectKey{Namespace: ns, Name: "imex-pods"}, &cd)).To(Succeed())
		if len(cd.Status.Cliques) == 1 {
			Expect(channels[0]).To(Equal(channels[1]), "one clique, one channel")
		}

		By("running the no-fabric demo on an HGX node: Ready as NoFabric, no channel")
		hgx, err := env.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: topology.ProfileLabel + "=hgx-h100-8"})
		Expect(err).NotTo(HaveOccurred())
		if len(hgx.Items) > 0 {
			createFixture(ctx, ns, "demo/computedomain-no-fabric.yaml")
			pod := runningPod(ctx, ns, "hgx-pod")
			Eventually(ctx, func(g Gomega) {
				var cd cdv1beta1.ComputeDomain
				g.Expect(computeDomains().Get(ctx, client.ObjectKey{Namespace: ns, Name: "hgx-domain"}, &cd)).To(Succeed())
				g.Expect(cd.Status.Status).To(Equal(cdv1beta1.ComputeDomainStatusReady))
				ready := meta.FindStatusCondition(cd.Status.Conditions, cdv1beta1.ComputeDomainConditionReady)
				g.Expect(ready).NotTo(BeNil())
				g.Expect(ready.Reason).To(Equal(cdv1beta1.ComputeDomainReasonNoFabric))
			}).WithTimeout(jobTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
			Expect(imexChannels(ctx, pod, "ctr")).To(BeEmpty())
		}

		By("starting no IMEX daemon pod for the domains: the long-lived ones serve them")
		Eventually(ctx, func(g Gomega) { expectServedByCliqueDaemons(ctx, g, ns, "imex-pods") }).WithTimeout(podStartTimeout).Should(Succeed())
		Consistently(ctx, func(g Gomega) {
			expectNoPerDomainObjects(ctx, g, uid)
			g.Expect(imexDaemonPods(ctx, g)).To(Equal(daemons))
		}).WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	})
})
