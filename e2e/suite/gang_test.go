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
	"os"
	"time"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
)

// gangHoldTime is how long a lone gang member must stay unbound.
const gangHoldTime = 2 * time.Second

var _ = Describe("A gang of two GPU pods with a clique topology constraint", func() {
	It("binds neither pod until both exist, then runs both in one NVLink clique", func(ctx SpecContext) {
		if _, err := env.client.Discovery().ServerResourcesForGroupVersion("scheduling.k8s.io/v1beta1"); err != nil {
			Skip("the cluster does not serve the Workload API (scheduling.k8s.io/v1beta1): " + err.Error())
		}
		ns := newNamespace(ctx)
		data, err := os.ReadFile(env.repoRoot + "/demo/gang-podgroup.yaml")
		Expect(err).NotTo(HaveOccurred())
		objs, err := simcluster.DecodeManifests(data)
		Expect(err).NotTo(HaveOccurred())
		Expect(objs).To(HaveLen(4))

		By("creating the PodGroup, the claim template and the first pod only")
		_, err = env.applier.Create(ctx, ns, objs[:3])
		Expect(err).NotTo(HaveOccurred())
		Consistently(ctx, func(g Gomega) {
			pod, err := env.client.CoreV1().Pods(ns).Get(ctx, "gang-0", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pod.Spec.NodeName).To(BeEmpty(), "a lone gang member stays unbound")
		}).WithTimeout(gangHoldTime).WithPolling(100 * time.Millisecond).Should(Succeed())

		By("creating the second pod")
		_, err = env.applier.Create(ctx, ns, objs[3:])
		Expect(err).NotTo(HaveOccurred())
		cliques := map[string]bool{}
		for _, name := range []string{"gang-0", "gang-1"} {
			pod := runningPod(ctx, ns, name)
			node, err := env.client.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			cliques[node.Labels[topology.CliqueLabel]] = true
		}
		Expect(cliques).To(HaveLen(1), "both pods share one clique")
		Expect(cliques).NotTo(HaveKey(""), "the clique is a real one")
		Eventually(ctx, func(g Gomega) {
			pg, err := env.client.SchedulingV1beta1().PodGroups(ns).Get(ctx, "gang", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pg.Status.Conditions).To(ContainElement(And(
				HaveField("Type", "PodGroupInitiallyScheduled"), HaveField("Status", metav1.ConditionTrue))))
		}).WithTimeout(podStartTimeout).Should(Succeed())
	})
})
