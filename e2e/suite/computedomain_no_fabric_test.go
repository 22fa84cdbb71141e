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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"
)

var _ = Describe("A ComputeDomain on a node without a multi-node NVLink fabric", func() {
	It("starts the pod with no IMEX channel injected and says so in the domain's status", func(ctx SpecContext) {
		cl := computeDomains()
		hgx, err := env.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: topology.ProfileLabel + "=hgx-h100-8"})
		Expect(err).NotTo(HaveOccurred())
		if len(hgx.Items) == 0 {
			Skip("no node labeled " + topology.ProfileLabel + "=hgx-h100-8 (the simulated cluster's HGX nodes)")
		}
		ns := newNamespace(ctx)
		createFixture(ctx, ns, "demo/computedomain-no-fabric.yaml")

		By("the pod runs and the domain is Ready, its Ready condition naming the node without a fabric")
		pod := runningPod(ctx, ns, "hgx-pod")
		Eventually(ctx, func(g Gomega) {
			var cd cdv1beta1.ComputeDomain
			g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hgx-domain"}, &cd)).To(Succeed())
			g.Expect(cd.Status.Status).To(Equal(cdv1beta1.ComputeDomainStatusReady))
			ready := meta.FindStatusCondition(cd.Status.Conditions, cdv1beta1.ComputeDomainConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(ready.Reason).To(Equal(cdv1beta1.ComputeDomainReasonNoFabric))
			g.Expect(ready.Message).To(ContainSubstring(pod.Spec.NodeName))
			g.Expect(cd.Status.Nodes).To(ConsistOf(And(HaveField("Name", pod.Spec.NodeName), HaveField("CliqueID", ""))))
		}).WithTimeout(jobTimeout).WithPolling(100*time.Millisecond).Should(Succeed(), func() string { return podsSummary(ctx, ns) })
		Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))

		if simulatedChecks("recorded CDI edits") {
			Expect(imexChannels(ctx, pod, "ctr")).To(BeEmpty(), "a node without a fabric has no IMEX channel to give")
		}
	})
})
