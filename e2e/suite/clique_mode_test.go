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
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"
)

// cliqueModeTimeout covers a helm upgrade that switches the IMEX mode: the controller's rollout and the
// long-lived daemons starting on every clique node (or going away again).
const cliqueModeTimeout = 3 * time.Minute

// cliqueNodes are the nodes the GPU plugin labeled with an NVLink clique.
func cliqueNodes(ctx SpecContext, g Gomega) map[string]string {
	nodes, err := env.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "nvidia.com/gpu.clique"})
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, n := range nodes.Items {
		out[n.Name] = n.Labels["nvidia.com/gpu.clique"]
	}
	return out
}

// switchIMEXMode upgrades the operator to imexMode and waits until the long-lived daemons run (Clique) on
// every clique node, each listed in its clique's IMEXClique, or are gone (Domain).
func switchIMEXMode(ctx SpecContext, mode string) {
	GinkgoHelper()
	Expect(env.sim.UpgradeOperator(ctx, map[string]any{"computeDomainDaemon": map[string]any{"imexMode": mode}})).To(Succeed())
	Eventually(ctx, func(g Gomega) {
		deploy, err := env.client.AppsV1().Deployments(simcluster.OperatorNamespace).Get(ctx, "compute-domain-controller", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(deploy.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--imex-mode=" + mode))
		g.Expect(deploy.Status.UpdatedReplicas).To(Equal(deploy.Status.Replicas))
		g.Expect(deploy.Status.ReadyReplicas).To(Equal(deploy.Status.Replicas))
		pods, err := env.client.CoreV1().Pods(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{LabelSelector: simcluster.CliqueDaemonSelector})
		g.Expect(err).NotTo(HaveOccurred())
		if mode == cdv1beta1.IMEXModeDomain {
			g.Expect(pods.Items).To(BeEmpty(), "long-lived IMEX daemons left after switching back")
			return
		}
		want := cliqueNodes(ctx, g)
		running := map[string]bool{}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running[p.Spec.NodeName] = true
			}
		}
		listed := map[string]bool{}
		var cliques cdv1beta1.IMEXCliqueList
		g.Expect(env.crClient.List(ctx, &cliques, client.InNamespace(simcluster.OperatorNamespace))).To(Succeed())
		for _, q := range cliques.Items {
			for _, n := range q.Status.Nodes {
				listed[n.Name] = want[n.Name] == q.Spec.CliqueID
			}
		}
		for node := range want {
			g.Expect(running).To(HaveKey(node), "a long-lived IMEX daemon runs on clique node %s", node)
			g.Expect(listed).To(HaveKeyWithValue(node, true), "the ensemble of node %s's clique lists it", node)
		}
	}).WithTimeout(cliqueModeTimeout).WithPolling(500 * time.Millisecond).Should(Succeed())
}

// installedIMEXMode is the IMEX mode the operator's controller runs in.
func installedIMEXMode(ctx SpecContext) string {
	GinkgoHelper()
	deploy, err := env.client.AppsV1().Deployments(simcluster.OperatorNamespace).Get(ctx, "compute-domain-controller", metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	for _, arg := range deploy.Spec.Template.Spec.Containers[0].Args {
		if mode, ok := strings.CutPrefix(arg, "--imex-mode="); ok {
			return mode
		}
	}
	return cdv1beta1.IMEXModeDomain
}

// requireIMEXMode runs a spec about one IMEX mode in that mode: on the simulated cluster it switches the
// install with helm upgrade when it runs the other one (and leaves it so: the next spec that cares switches
// again), on another cluster it skips the spec. Specs that do not call it hold in both modes.
func requireIMEXMode(ctx SpecContext, mode string) {
	GinkgoHelper()
	if installedIMEXMode(ctx) == mode {
		return
	}
	if !simulatedChecks("switching the IMEX mode with helm upgrade") {
		Skip("the operator runs the other IMEX mode; this spec is about computeDomainDaemon.imexMode=" + mode)
	}
	By("helm upgrade --reuse-values --set computeDomainDaemon.imexMode=" + mode)
	switchIMEXMode(ctx, mode)
}

var _ = Describe("The Clique IMEX mode (computeDomainDaemon.imexMode=Clique)", func() {
	It("serves a domain from the nodes' long-lived IMEX daemons: Ready with a channel per clique and no daemon pod of its own", func(ctx SpecContext) {
		requireIMEXMode(ctx, cdv1beta1.IMEXModeClique)

		ns := newNamespace(ctx)
		By("running the two-pod ComputeDomain demo unchanged")
		createFixture(ctx, ns, "demo/computedomain-pods.yaml")
		uid := waitForReadyDomainOfNodes(ctx, ns, "imex-pods", 2)
		var channels []string
		for _, name := range []string{"imex-pod-0", "imex-pod-1"} {
			pod := runningPod(ctx, ns, name)
			got := imexChannels(pod, pod.Spec.Containers[0].Name)
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
			Expect(imexChannels(pod, "ctr")).To(BeEmpty())
		}

		By("starting no IMEX daemon pod for the domain")
		Consistently(ctx, func(g Gomega) {
			pods, err := env.client.CoreV1().Pods(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{
				LabelSelector: simcluster.DaemonSelector + "," + cdv1beta1.ComputeDomainLabelKey + "=" + string(uid),
			})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods.Items).To(BeEmpty())
		}).WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	})
})
