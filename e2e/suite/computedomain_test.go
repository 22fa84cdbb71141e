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
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/nodeagent"
)

var _ = Describe("An NVIDIA-style ComputeDomain job of 4 pods", func() {
	It("runs every pod with the domain's one IMEX channel in a Ready domain of 4 nodes served by the nodes' long-lived IMEX daemons, which stay as they were when the job is done and the domain deleted", func(ctx SpecContext) {
		cl := computeDomains()
		var daemons map[types.UID]string
		Eventually(ctx, func(g Gomega) {
			daemons = imexDaemonPods(ctx, g)
			g.Expect(daemons).NotTo(BeEmpty(), "the chart runs a long-lived IMEX daemon on every clique node")
		}).WithTimeout(podStartTimeout).Should(Succeed())
		ns := newNamespace(ctx)
		createFixture(ctx, ns, "demo/computedomain-job.yaml")
		domain := client.ObjectKey{Namespace: ns, Name: "imex-domain"}

		By("waiting for the domain to be Ready with 4 nodes and the 4 pods to start")
		var pods []corev1.Pod
		var cd cdv1beta1.ComputeDomain
		Eventually(ctx, func(g Gomega) {
			g.Expect(cl.Get(ctx, domain, &cd)).To(Succeed())
			g.Expect(cd.Status.Status).To(Equal(cdv1beta1.ComputeDomainStatusReady))
			g.Expect(cd.Status.Nodes).To(HaveLen(4))
			for _, n := range cd.Status.Nodes {
				g.Expect(n.Status).To(Equal(cdv1beta1.ComputeDomainStatusReady), "node %s", n.Name)
				g.Expect(n.IPAddress).NotTo(BeEmpty(), "node %s has its IMEX daemon's address", n.Name)
				g.Expect(n.CliqueID).NotTo(BeEmpty(), "node %s has its clique", n.Name)
			}
			distinctIndices(g, &cd)
			g.Expect(cd.Status.Cliques).To(HaveLen(1), "one rack, one clique")
			g.Expect(cd.Status.Cliques[0].Channel).NotTo(BeNil(), "the domain holds a channel in its clique")
			list, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=nccl-job"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Items).To(HaveLen(4))
			for _, p := range list.Items {
				g.Expect(p.Status.Phase).To(BeElementOf(corev1.PodRunning, corev1.PodSucceeded), "pod %s", p.Name)
			}
			pods = list.Items
		}).WithTimeout(jobTimeout).WithPolling(100*time.Millisecond).Should(Succeed(), func() string { return podsSummary(ctx, ns) })
		channel := *cd.Status.Cliques[0].Channel
		Expect(channel).NotTo(BeZero(), "channel 0 stays free")

		By("checking that the nodes' long-lived IMEX daemons serve the domain, and that it started none of its own")
		Eventually(ctx, func(g Gomega) {
			expectServedByCliqueDaemons(ctx, g, ns, domain.Name)
		}).WithTimeout(podStartTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
		Eventually(ctx, func(g Gomega) { g.Expect(imexDaemonPods(ctx, g)).To(Equal(daemons)) }).Should(Succeed())
		Eventually(ctx, func(g Gomega) { expectNoPerDomainObjects(ctx, g, cd.UID) }).Should(Succeed())

		if simulatedChecks("recorded CDI edits") {
			for _, p := range pods {
				edits, err := nodeagent.DecodeCDIEdits(p.Annotations)
				Expect(err).NotTo(HaveOccurred())
				var got []string
				for _, n := range edits["ctr"].DeviceNodes {
					if strings.HasPrefix(n.Path, "/dev/nvidia-caps-imex-channels/") {
						got = append(got, filepath.Base(n.Path))
					}
				}
				Expect(got).To(Equal([]string{fmt.Sprintf("channel%d", channel)}), "pod %s gets exactly the domain's IMEX channel", p.Name)
			}
		}

		By("waiting for the job to complete: the long-lived daemons stay, none restarted")
		Eventually(ctx, func(g Gomega) {
			job, err := env.client.BatchV1().Jobs(ns).Get(ctx, "nccl-job", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(job.Status.Succeeded).To(BeEquivalentTo(4))
		}).WithTimeout(jobTimeout).Should(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(imexDaemonPods(ctx, g)).To(Equal(daemons))
			for node, d := range cliqueDaemons(ctx, g) {
				g.Expect(d.Status.Phase).To(Equal(corev1.PodRunning), "IMEX daemon on %s", node)
			}
		}).Should(Succeed())

		By("deleting the domain: nothing it created remains, the daemons run on")
		Expect(cl.Delete(ctx, &cdv1beta1.ComputeDomain{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: domain.Name}})).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			err := cl.Get(ctx, domain, &cdv1beta1.ComputeDomain{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "domain gone, got %v", err)
			_, err = env.client.ResourceV1().ResourceClaimTemplates(ns).Get(ctx, "imex-channel", metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "channel claim template gone, got %v", err)
			expectNoPerDomainObjects(ctx, g, cd.UID)
			g.Expect(imexDaemonPods(ctx, g)).To(Equal(daemons))
		}).WithTimeout(jobTimeout).Should(Succeed())
	})
})

var _ = Describe("A ComputeDomain whose node's IMEX daemon crashes", func() {
	It("goes Degraded naming the node, gets the node's long-lived daemon restarted by the node and is Ready again with both nodes", func(ctx SpecContext) {
		crashAndRecover(ctx)
	})
})

// crashAndRecover is the crash story: the long-lived IMEX daemon of a node of the domain is killed.
func crashAndRecover(ctx SpecContext) {
	requireSimulated("killing a daemon container")
	cl := computeDomains()
	ns := newNamespace(ctx)
	createFixture(ctx, ns, "demo/computedomain-pods.yaml")
	const domain = "imex-pods"
	domainReady := func(g Gomega) {
		var cd cdv1beta1.ComputeDomain
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: domain}, &cd)).To(Succeed())
		g.Expect(cd.Status.Status).To(Equal(cdv1beta1.ComputeDomainStatusReady))
		g.Expect(cd.Status.Nodes).To(HaveLen(2))
		for _, n := range cd.Status.Nodes {
			g.Expect(n.Status).To(Equal(cdv1beta1.ComputeDomainStatusReady), "node %s", n.Name)
		}
		degraded := meta.FindStatusCondition(cd.Status.Conditions, cdv1beta1.ComputeDomainConditionDegraded)
		g.Expect(degraded).NotTo(BeNil(), "status.conditions has a Degraded condition")
		g.Expect(degraded.Status).To(Equal(metav1.ConditionFalse), "Degraded: %s %s", degraded.Reason, degraded.Message)
	}
	// The namespace's pods are listed once, when a wait for domainReady fails, not on every failed poll.
	summary := func() string { return podsSummary(ctx, ns) }
	Eventually(ctx, domainReady).WithTimeout(jobTimeout).WithPolling(100*time.Millisecond).Should(Succeed(), summary)
	pod := runningPod(ctx, ns, "imex-pod-0")
	node := pod.Spec.NodeName

	var daemon corev1.Pod
	Eventually(ctx, func(g Gomega) {
		daemons, err := env.client.CoreV1().Pods(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{
			LabelSelector: simcluster.CliqueDaemonSelector, FieldSelector: "spec.nodeName=" + node,
		})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(daemons.Items).To(HaveLen(1))
		g.Expect(daemons.Items[0].Status.Phase).To(Equal(corev1.PodRunning))
		daemon = daemons.Items[0]
	}).WithTimeout(podStartTimeout).Should(Succeed())

	// The Degraded window lasts from the crash until the restarted
	// daemon and its peers report ready again (about a second here):
	// too short to poll for, so a watch started now logs every version.
	By("watching the domain's Degraded condition from before the crash")
	degradedLog := watchCondition(ctx, cl, ns, domain, cdv1beta1.ComputeDomainConditionDegraded)

	By("killing the IMEX daemon container on " + node)
	Expect(env.sim.KillContainer(node, daemon.Namespace, daemon.Name, daemon.Spec.Containers[0].Name)).To(Succeed())

	By("waiting for the restart and the domain's recovery")
	Eventually(ctx, func(g Gomega) {
		p, err := env.client.CoreV1().Pods(daemon.Namespace).Get(ctx, daemon.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Status.ContainerStatuses).To(HaveLen(1))
		cs := p.Status.ContainerStatuses[0]
		g.Expect(cs.RestartCount).To(BeEquivalentTo(1))
		g.Expect(cs.LastTerminationState.Terminated).NotTo(BeNil())
		g.Expect(cs.LastTerminationState.Terminated.ExitCode).To(BeEquivalentTo(137))
	}).WithTimeout(podStartTimeout).Should(Succeed())
	Eventually(ctx, domainReady).WithTimeout(jobTimeout).WithPolling(100*time.Millisecond).Should(Succeed(), summary)

	By("checking that the domain went Degraded naming " + node + " and then recovered")
	// The message names each lost node with its cause: the killed node
	// itself ("node N (IMEXReady=False ...)", DaemonLost) or a surviving
	// peer whose stand-in IMEX lost the connection ("... not connected to
	// 1 of 1 peers: N (address)", PeersLost). Either way N is followed by
	// " (", which tells n01 from n010.
	namesNode := MatchRegexp(`(^|[\s,:])` + regexp.QuoteMeta(node) + ` \(`)
	degradedNamingNode := SatisfyAll(
		HaveField("Status", metav1.ConditionTrue),
		HaveField("Reason", BeElementOf(cdv1beta1.ComputeDomainReasonDaemonLost, cdv1beta1.ComputeDomainReasonPeersLost)),
		HaveField("Message", namesNode),
	)
	Eventually(func(g Gomega) {
		g.Expect(degradedLog.Errors()).To(BeEmpty(), "watch of the domain")
		seen := degradedLog.Seen()
		first := slices.IndexFunc(seen, func(c metav1.Condition) bool { return c.Status == metav1.ConditionTrue })
		g.Expect(first).To(BeNumerically(">", 0), "Degraded was False before the crash and then True\n%s", degradedLog)
		g.Expect(seen[0].Status).To(Equal(metav1.ConditionFalse), "%s", degradedLog)
		g.Expect(seen).To(ContainElement(degradedNamingNode), "%s", degradedLog)
		g.Expect(seen[len(seen)-1].Status).To(Equal(metav1.ConditionFalse), "Degraded is False again after the recovery\n%s", degradedLog)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	AddReportEntry("Degraded conditions seen", degradedLog.String())

	By("checking the Warning event that the domain is degraded, naming " + node)
	Eventually(ctx, func(g Gomega) {
		events, err := env.client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		var ofDomain []eventsv1.Event
		for _, e := range events.Items {
			if e.Regarding.Kind == "ComputeDomain" && e.Regarding.Name == domain {
				ofDomain = append(ofDomain, e)
			}
		}
		g.Expect(ofDomain).To(ContainElement(SatisfyAll(
			HaveField("Type", corev1.EventTypeWarning),
			HaveField("Reason", BeElementOf(cdv1beta1.ComputeDomainReasonDaemonLost, cdv1beta1.ComputeDomainReasonPeersLost)),
			HaveField("Note", SatisfyAll(HavePrefix("ComputeDomain is degraded: "), namesNode)),
		)), "events regarding ComputeDomain %s/%s: %s", ns, domain, eventNotes(ofDomain))
		g.Expect(ofDomain).To(ContainElement(SatisfyAll(
			HaveField("Type", corev1.EventTypeNormal),
			HaveField("Reason", cdv1beta1.ComputeDomainReasonHealthy),
			HaveField("Note", HavePrefix("ComputeDomain recovered: ")),
		)), "events regarding ComputeDomain %s/%s: %s", ns, domain, eventNotes(ofDomain))
	}).WithTimeout(podStartTimeout).Should(Succeed())
}

// eventNotes lists events for failure messages.
func eventNotes(events []eventsv1.Event) string {
	var parts []string
	for _, e := range events {
		parts = append(parts, fmt.Sprintf("%s %s: %s", e.Type, e.Reason, e.Note))
	}
	return "[" + strings.Join(parts, "; ") + "]"
}
