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

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
)

const (
	// apiOutage is how long the operator's components lose the API server.
	apiOutage = 30 * time.Second
	// recoveryTimeout covers client-go's reconnect backoff (up to 30 s) after the outage, then formation.
	recoveryTimeout = 2 * time.Minute
)

var _ = Describe("The API server refusing the operator's connections for 30 s while a domain forms", Serial, func() {
	It("converges once it is back: the domain Ready with both nodes, one DaemonSet, one daemon template, one record per node, the pods Running", func(ctx SpecContext) {
		requireIMEXMode(ctx, imexModeDomain)
		requireSimulated("cutting the operator's pods off the API server")
		ns := newNamespace(ctx)
		createFixture(ctx, ns, "demo/computedomain-pods.yaml")
		By("cutting every connection of the operator's pods to the API server and refusing new ones for " + apiOutage.String())
		env.sim.CutAPIServer()
		DeferCleanup(env.sim.RestoreAPIServer)
		select {
		case <-ctx.Done():
			return
		case <-time.After(apiOutage):
		}
		env.sim.RestoreAPIServer()

		By("waiting for the domain and its pods after the outage")
		uid := waitForReadyDomainOfNodesWithin(ctx, ns, "imex-pods", 2, recoveryTimeout)
		runningPod(ctx, ns, "imex-pod-0")
		runningPod(ctx, ns, "imex-pod-1")
		selector := metav1.ListOptions{LabelSelector: cdv1beta1.ComputeDomainLabelKey + "=" + string(uid)}
		dss, err := env.client.AppsV1().DaemonSets(simcluster.OperatorNamespace).List(ctx, selector)
		Expect(err).NotTo(HaveOccurred())
		Expect(dss.Items).To(HaveLen(1), "one IMEX DaemonSet")
		templates, err := env.client.ResourceV1().ResourceClaimTemplates(simcluster.OperatorNamespace).List(ctx, selector)
		Expect(err).NotTo(HaveOccurred())
		Expect(templates.Items).To(HaveLen(1), "one daemon claim template")
		By("the operator's own pods are all running again")
		Eventually(ctx, func(g Gomega) {
			for _, p := range operatorPods(ctx, g) {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
			}
		}).WithTimeout(podStartTimeout).Should(Succeed())
	})
})
