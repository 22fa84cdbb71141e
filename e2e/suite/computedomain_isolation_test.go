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
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/nodeagent"
)

// Named timeouts of the isolation specs.
const (
	// otherDomainsGoneTimeout covers the namespace cleanup of earlier specs,
	// whose domains hold channels in the rack.
	otherDomainsGoneTimeout = 2 * time.Minute
	domainReadyTimeout      = 2 * time.Minute
	domainTeardownTimeout   = 2 * time.Minute
)

// readyDomain is what a spec reads from a Ready single-clique domain.
type readyDomain struct {
	uid     types.UID
	node    string
	ip      string
	channel int32
}

// waitForReadyDomain waits until the domain is Ready with its one node and
// a channel for its clique.
func waitForReadyDomain(ctx context.Context, cl client.Client, ns, name string) readyDomain {
	var d readyDomain
	Eventually(ctx, func(g Gomega) {
		var cd cdv1beta1.ComputeDomain
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cd)).To(Succeed())
		g.Expect(cd.Status.Status).To(Equal(cdv1beta1.ComputeDomainStatusReady), "domain %s", name)
		g.Expect(cd.Status.Nodes).To(HaveLen(1))
		node := cd.Status.Nodes[0]
		g.Expect(cd.Status.Cliques).To(HaveLen(1))
		channel := cd.Status.Cliques[0].Channel
		g.Expect(channel).NotTo(BeNil(), "domain %s has a channel for its clique", name)
		d = readyDomain{uid: cd.UID, node: node.Name, ip: node.IPAddress, channel: *channel}
	}).WithTimeout(domainReadyTimeout).WithPolling(100*time.Millisecond).Should(Succeed(), func() string { return name + ": " + podsSummary(ctx, ns) })
	return d
}

// imexChannels are the IMEX channel device nodes ("channel3") a pod's container has: on the simulated cluster,
// whose nodes run no container, those of its recorded CDI edits; on a real cluster (kind), the character devices
// under /dev/nvidia-caps-imex-channels inside the running container (kubectl exec), as containerd injected them
// from the CDI spec our plugin wrote.
func imexChannels(ctx context.Context, pod *corev1.Pod, container string) []string {
	var got []string
	if env.sim == nil {
		out, err := execInContainer(ctx, pod, container, "sh", "-c",
			"for f in /dev/nvidia-caps-imex-channels/*; do [ -c \"$f\" ] && echo \"${f##*/}\"; done; true")
		Expect(err).NotTo(HaveOccurred())
		return strings.Fields(out)
	}
	edits, err := nodeagent.DecodeCDIEdits(pod.Annotations)
	Expect(err).NotTo(HaveOccurred())
	for _, n := range edits[container].DeviceNodes {
		if strings.HasPrefix(n.Path, "/dev/nvidia-caps-imex-channels/") {
			got = append(got, filepath.Base(n.Path))
		}
	}
	return got
}

// podClaimUIDs are the UIDs of the claims a pod got from its templates.
func podClaimUIDs(ctx context.Context, pod *corev1.Pod) []string {
	var uids []string
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.ResourceClaimName == nil {
			continue
		}
		claim, err := env.client.ResourceV1().ResourceClaims(pod.Namespace).Get(ctx, *s.ResourceClaimName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		uids = append(uids, string(claim.UID))
	}
	return uids
}

// cdiFilesOf lists the CDI spec files on a simulated node that belong to
// one of the claims.
func cdiFilesOf(node string, claimUIDs sets.Set[string]) ([]string, error) {
	paths, err := env.sim.NodePaths(node)
	if err != nil {
		return nil, err
	}
	files, err := os.ReadDir(paths.CDI)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		for uid := range claimUIDs {
			if strings.Contains(f.Name(), uid) {
				out = append(out, f.Name())
			}
		}
	}
	return out, nil
}

var _ = Describe("Two teams' ComputeDomains in one rack, with pods on one node", func() {
	It("give each domain its own channel on the shared node, both served by the node's one long-lived IMEX daemon; a deleted domain leaves nothing behind and its channel goes to the next domain", func(ctx SpecContext) {
		cl := computeDomains()

		By("waiting until no other ComputeDomain holds a channel, so that channels are handed out from the lowest")
		Eventually(ctx, func(g Gomega) {
			var list cdv1beta1.ComputeDomainList
			g.Expect(cl.List(ctx, &list)).To(Succeed())
			g.Expect(list.Items).To(BeEmpty())
		}).WithTimeout(otherDomainsGoneTimeout).Should(Succeed())

		ns := newNamespace(ctx)
		createFixture(ctx, ns, "demo/computedomain-shared-node.yaml")

		By("waiting for both domains to be Ready on the one node")
		a := waitForReadyDomain(ctx, cl, ns, "team-a")
		b := waitForReadyDomain(ctx, cl, ns, "team-b")
		podA, podB := runningPod(ctx, ns, "team-a-0"), runningPod(ctx, ns, "team-b-0")
		Expect(podB.Spec.NodeName).To(Equal(podA.Spec.NodeName), "team-b's pod follows team-a's")
		Expect([]string{a.node, b.node}).To(HaveEach(podA.Spec.NodeName), "both domains list the shared node")
		Expect(b.channel).NotTo(Equal(a.channel), "a second domain in the same rack gets a different channel")
		Expect(b.ip).To(Equal(a.ip), "both domains name the one long-lived IMEX daemon of %s", a.node)
		var daemon corev1.Pod
		Eventually(ctx, func(g Gomega) {
			servedA, servedB := expectServedByCliqueDaemons(ctx, g, ns, "team-a"), expectServedByCliqueDaemons(ctx, g, ns, "team-b")
			g.Expect(servedB[b.node].UID).To(Equal(servedA[a.node].UID), "one IMEX daemon pod serves both domains on %s", a.node)
			daemon = servedA[a.node]
		}).WithTimeout(podStartTimeout).Should(Succeed())

		if simulatedChecks("recorded CDI edits") {
			Expect(imexChannels(ctx, podA, "ctr")).To(Equal([]string{fmt.Sprintf("channel%d", a.channel)}), "team-a's pod sees only team-a's channel")
			Expect(imexChannels(ctx, podB, "ctr")).To(Equal([]string{fmt.Sprintf("channel%d", b.channel)}), "team-b's pod sees only team-b's channel")
		}

		By("recording what team-a's domain caused: its pod's claims and their CDI files, no object in the operator namespace")
		domainSelector := cdv1beta1.ComputeDomainLabelKey + "=" + string(a.uid)
		Eventually(ctx, func(g Gomega) { expectNoPerDomainObjects(ctx, g, a.uid) }).Should(Succeed())
		claimUIDs := sets.New(podClaimUIDs(ctx, podA)...)
		Expect(claimUIDs.Len()).To(Equal(2), "team-a's GPU and channel claims")

		if simulatedChecks("CDI files on the nodes") {
			Expect(cdiFilesOf(a.node, claimUIDs)).NotTo(BeEmpty(), "team-a's claims have CDI files on %s", a.node)
		}

		By("deleting team-a's pod and domain")
		Expect(env.client.CoreV1().Pods(ns).Delete(ctx, "team-a-0", metav1.DeleteOptions{})).To(Succeed())
		Expect(cl.Delete(ctx, &cdv1beta1.ComputeDomain{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team-a"}})).To(Succeed())

		By("waiting until nothing team-a's domain created remains")
		Eventually(ctx, func(g Gomega) {
			err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team-a"}, &cdv1beta1.ComputeDomain{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "domain gone, got %v", err)
			expectNoPerDomainObjects(ctx, g, a.uid)
			for _, tns := range []string{ns, simcluster.OperatorNamespace} {
				templates, err := env.client.ResourceV1().ResourceClaimTemplates(tns).List(ctx, metav1.ListOptions{LabelSelector: domainSelector})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(templates.Items).To(BeEmpty(), "claim templates in %s", tns)
				claims, err := env.client.ResourceV1().ResourceClaims(tns).List(ctx, metav1.ListOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				for _, c := range claims.Items {
					g.Expect(claimUIDs.Has(string(c.UID))).To(BeFalse(), "claim %s/%s of team-a remains", tns, c.Name)
				}
			}
			_, err = env.client.ResourceV1().ResourceClaimTemplates(ns).Get(ctx, "team-a-channel", metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "channel claim template gone, got %v", err)
			nodes, err := env.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			for _, n := range nodes.Items {
				for k, v := range n.Labels {
					g.Expect(k+"="+v).NotTo(ContainSubstring(string(a.uid)), "node %s carries a label of team-a's domain", n.Name)
				}
			}
		}).WithTimeout(domainTeardownTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())

		if simulatedChecks("CDI files on the nodes") {
			Eventually(ctx, func(g Gomega) {
				for _, n := range env.sim.Nodes() {
					g.Expect(cdiFilesOf(n.Name, claimUIDs)).To(BeEmpty(), "CDI files of team-a's claims on %s", n.Name)
				}
			}).WithTimeout(domainTeardownTimeout).Should(Succeed())
		}

		By("team-b's domain is still Ready and keeps its channel, served by the same IMEX daemon")
		Expect(waitForReadyDomain(ctx, cl, ns, "team-b").channel).To(Equal(b.channel))
		Eventually(ctx, func(g Gomega) {
			g.Expect(expectServedByCliqueDaemons(ctx, g, ns, "team-b")[b.node].UID).To(Equal(daemon.UID))
		}).WithTimeout(podStartTimeout).Should(Succeed())

		By("a next domain in the rack takes the channel team-a released")
		createFixture(ctx, ns, "demo/computedomain-next-team.yaml")
		c := waitForReadyDomain(ctx, cl, ns, "team-c")
		Expect(c.channel).To(Equal(a.channel), "team-a's channel %d is no longer reserved", a.channel)
	})
})
