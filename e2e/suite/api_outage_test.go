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
	"k8s.io/apimachinery/pkg/types"
)

const (
	// apiOutage is how long the operator's components lose the API server.
	apiOutage = 30 * time.Second
	// recoveryTimeout covers client-go's reconnect backoff (up to 30 s) after the outage, then formation.
	recoveryTimeout = 2 * time.Minute
)

var _ = Describe("The API server refusing the operator's connections for 30 s while a domain forms", Serial, func() {
	It("converges once it is back: the domain Ready with both nodes, served by the nodes' long-lived IMEX daemons (their IMEXNodes Ready, the clique's ensemble listing both), the pods Running", func(ctx SpecContext) {
		requireSimulated("cutting the operator's pods off the API server")
		var daemons map[types.UID]string
		Eventually(ctx, func(g Gomega) { daemons = imexDaemonPods(ctx, g) }).Should(Succeed())
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
		Eventually(ctx, func(g Gomega) {
			expectServedByCliqueDaemons(ctx, g, ns, "imex-pods")
			expectNoPerDomainObjects(ctx, g, uid)
			g.Expect(imexDaemonPods(ctx, g)).To(Equal(daemons), "the long-lived IMEX daemons outlived the outage, none added")
		}).WithTimeout(recoveryTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
		By("the operator's own pods are all running again")
		Eventually(ctx, func(g Gomega) {
			for _, p := range operatorPods(ctx, g) {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
			}
		}).WithTimeout(podStartTimeout).Should(Succeed())
	})
})
