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

package formation_test

import (
	"context"
	"fmt"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain"
	"github.com/computedomain-operator/computedomain-operator/daemon"
	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	cdplugin "github.com/computedomain-operator/computedomain-operator/kubeletplugin/computedomain"
)

func channelPath(ch int32) string { return fmt.Sprintf("/dev/nvidia-caps-imex-channels/channel%d", ch) }

// nodeNames is the set of the nodes' names, as daemonSetNodes returns it.
func nodeNames(nodes ...*simNode) map[string]bool {
	names := map[string]bool{}
	for _, n := range nodes {
		names[n.name] = true
	}
	return names
}

func cliqueChannel(g Gomega, cd *v1beta1.ComputeDomain, clique string) int32 {
	for _, c := range cd.Status.Cliques {
		if c.CliqueID == clique && c.Channel != nil {
			return *c.Channel
		}
	}
	g.Expect(cd.Status.Cliques).To(ContainElement(HaveField("CliqueID", clique)), "clique %s has a channel", clique)
	return -1
}

var _ = Describe("ComputeDomain node side", func() {
	var (
		ctx    context.Context
		cancel context.CancelFunc
		ns     string
		nodes  []*simNode
	)

	BeforeEach(func() {
		ctx, cancel = context.WithCancel(suiteCtx)
		namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "team-"}}
		Expect(k8s.Create(ctx, namespace)).To(Succeed())
		ns = namespace.Name
		var err error
		specBase, err = os.MkdirTemp("", "formation")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			cancel()
			followers.Wait()
			for _, n := range nodes {
				n.stopAll()
			}
			Expect(os.RemoveAll(specBase)).To(Succeed())
		})
	})

	It("forms a 4-node domain: the controller places a daemon on each allocated node, the plugins wait, the daemons form one ensemble, every pod gets the domain's channel", func() {
		nodes = newRack(ctx, "form", 4)
		cd := createDomain(ctx, "train", ns)
		followDaemonSet(ctx, cd, 0, nodes)

		views := make([]chan []string, len(nodes))
		for i, n := range nodes {
			views[i] = make(chan []string, 1)
			claim := workloadClaim(ctx, cd, n, fmt.Sprintf("worker-%d", i), 0)
			go func() {
				defer GinkgoRecover()
				views[i] <- prepareUntilReady(ctx, n, claim).DeviceNodes
			}()
		}

		By("the domain becomes Ready with the 4 nodes, their addresses and indices")
		var ready *v1beta1.ComputeDomain
		Eventually(func(g Gomega) {
			ready = getDomain(g, ctx, cd)
			g.Expect(ready.Status.Status).To(Equal(v1beta1.ComputeDomainStatusReady))
			g.Expect(ready.Status.Nodes).To(HaveLen(4))
		}).WithTimeout(formed).WithPolling(poll).Should(Succeed())
		indices := map[int32]bool{}
		for i, n := range nodes {
			Expect(ready.Status.Nodes).To(ContainElement(And(HaveField("Name", n.name), HaveField("IPAddress", n.podIP(0)), HaveField("CliqueID", n.clique))), "node %d", i)
		}
		for _, sn := range ready.Status.Nodes {
			indices[sn.Index] = true
		}
		Expect(indices).To(HaveLen(4), "every node has its own index")

		By("every pod's container sees the same channel: the clique's")
		ch := cliqueChannel(Default, ready, nodes[0].clique)
		Expect(ch).To(BeNumerically(">=", 1), "channel 0 stays with the host")
		for i := range nodes {
			Eventually(views[i]).WithTimeout(formed).Should(Receive(Equal([]string{channelPath(ch)})))
		}

		By("the DaemonSet lists exactly the 4 nodes")
		Expect(daemonSetNodes(ctx, cd)).To(Equal(nodeNames(nodes...)))

		By("each daemon wrote its record twice (spec, ready) and the plugins wrote nothing: at most 2 writes per node")
		for _, n := range nodes {
			Expect(n.daemon(cd.UID).d.Record().Writes()).To(BeNumerically("<=", 2), "daemon on %s", n.name)
		}
	})

	It("gives a second domain in the same rack another channel, and a node running pods of both keeps them apart", func() {
		nodes = newRack(ctx, "two", 3)
		a := createDomain(ctx, "alpha", ns)
		b := createDomain(ctx, "beta", ns)
		followDaemonSet(ctx, a, 0, nodes)
		followDaemonSet(ctx, b, 1, nodes)

		// alpha on nodes 0 and 1, beta on nodes 1 and 2: node 1 runs both.
		viewA0 := prepareUntilReady(ctx, nodes[0], workloadClaim(ctx, a, nodes[0], "alpha-0", 0))
		viewA1 := prepareUntilReady(ctx, nodes[1], workloadClaim(ctx, a, nodes[1], "alpha-1", 0))
		viewB1 := prepareUntilReady(ctx, nodes[1], workloadClaim(ctx, b, nodes[1], "beta-1", 1))
		viewB2 := prepareUntilReady(ctx, nodes[2], workloadClaim(ctx, b, nodes[2], "beta-2", 0))

		chA := cliqueChannel(Default, getDomain(Default, ctx, a), nodes[0].clique)
		chB := cliqueChannel(Default, getDomain(Default, ctx, b), nodes[0].clique)
		Expect(chA).NotTo(Equal(chB), "two live domains in one clique never share a channel")
		Expect(viewA0.DeviceNodes).To(Equal([]string{channelPath(chA)}))
		Expect(viewA1.DeviceNodes).To(Equal([]string{channelPath(chA)}))
		Expect(viewB1.DeviceNodes).To(Equal([]string{channelPath(chB)}))
		Expect(viewB2.DeviceNodes).To(Equal([]string{channelPath(chB)}))

		By("both domains' DaemonSets list node 1, which runs both daemons")
		Expect(daemonSetNodes(ctx, a)).To(Equal(nodeNames(nodes[0], nodes[1])))
		Expect(daemonSetNodes(ctx, b)).To(Equal(nodeNames(nodes[1], nodes[2])))
		Expect(nodes[1].daemon(a.UID)).NotTo(BeNil(), "alpha's daemon on %s", nodes[1].name)
		Expect(nodes[1].daemon(b.UID)).NotTo(BeNil(), "beta's daemon on %s", nodes[1].name)
		Expect(nodes[0].daemon(b.UID)).To(BeNil(), "beta's daemon on %s, which runs no beta pod", nodes[0].name)
		Expect(nodes[2].daemon(a.UID)).To(BeNil(), "alpha's daemon on %s, which runs no alpha pod", nodes[2].name)
	})

	It("reports a node whose IMEX died as Degraded, naming it, and recovers when the supervisor restarts IMEX", func() {
		nodes = newRack(ctx, "loss", 3)
		cd := createDomain(ctx, "train", ns)
		followDaemonSet(ctx, cd, 0, nodes)
		for i, n := range nodes {
			prepareUntilReady(ctx, n, workloadClaim(ctx, cd, n, fmt.Sprintf("worker-%d", i), 0))
		}
		Eventually(func(g Gomega) {
			g.Expect(getDomain(g, ctx, cd).Status.Status).To(Equal(v1beta1.ComputeDomainStatusReady))
		}).WithTimeout(formed).WithPolling(poll).Should(Succeed())

		By("killing node 1's IMEX process")
		sup := nodes[1].daemon(cd.UID).d.Supervisor()
		Expect(sup.StopProcessForTest()).To(Succeed())

		Eventually(func(g Gomega) {
			got := getDomain(g, ctx, cd)
			degraded := meta.FindStatusCondition(got.Status.Conditions, v1beta1.ComputeDomainConditionDegraded)
			g.Expect(degraded).NotTo(BeNil())
			g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(degraded.Message).To(ContainSubstring(nodes[1].name))
		}).WithTimeout(formed).WithPolling(poll).Should(Succeed(), "Degraded names the node")

		Eventually(func(g Gomega) {
			got := getDomain(g, ctx, cd)
			g.Expect(got.Status.Status).To(Equal(v1beta1.ComputeDomainStatusReady))
			g.Expect(meta.IsStatusConditionFalse(got.Status.Conditions, v1beta1.ComputeDomainConditionDegraded)).To(BeTrue())
		}).WithTimeout(formed).WithPolling(poll).Should(Succeed(), "the domain recovers")
		Expect(sup.Starts()).To(Equal(2))
	})

	It("reports a node whose whole daemon died as Degraded through its peers, and recovers when the daemon comes back", func() {
		nodes = newRack(ctx, "crash", 3)
		cd := createDomain(ctx, "train", ns)
		for i, n := range nodes {
			n.startDaemon(ctx, cd, n.podIP(0))
			prepareUntilReady(ctx, n, workloadClaim(ctx, cd, n, fmt.Sprintf("worker-%d", i), 0))
		}

		By("node 2's daemon process dies: its member record stays, its IMEX connections close")
		nodes[2].mu.Lock()
		crashed := nodes[2].daemons[cd.UID]
		delete(nodes[2].daemons, cd.UID)
		nodes[2].mu.Unlock()
		crashed.stop()
		Eventually(func(g Gomega) {
			got := getDomain(g, ctx, cd)
			degraded := meta.FindStatusCondition(got.Status.Conditions, v1beta1.ComputeDomainConditionDegraded)
			g.Expect(degraded).NotTo(BeNil())
			g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(degraded.Reason).To(Equal(v1beta1.ComputeDomainReasonPeersLost))
			g.Expect(degraded.Message).To(ContainSubstring(nodes[2].name + " (" + nodes[2].podIP(0) + ")"))
		}).WithTimeout(formed).WithPolling(poll).Should(Succeed(), "the peers name the lost node")

		By("the daemon restarts (a new pod on the node)")
		nodes[2].startDaemon(ctx, cd, nodes[2].podIP(0))
		Eventually(func(g Gomega) {
			got := getDomain(g, ctx, cd)
			g.Expect(got.Status.Status).To(Equal(v1beta1.ComputeDomainStatusReady))
			g.Expect(meta.IsStatusConditionFalse(got.Status.Conditions, v1beta1.ComputeDomainConditionDegraded)).To(BeTrue())
		}).WithTimeout(formed).WithPolling(poll).Should(Succeed(), "the domain recovers")
	})

	It("forms one IMEX ensemble per rack for a domain across two racks", func() {
		rackA := newRack(ctx, "rack-a", 2)
		rackB := newRack(ctx, "rack-b", 2)
		nodes = append(append([]*simNode{}, rackA...), rackB...)
		cd := createDomain(ctx, "wide", ns)
		followDaemonSet(ctx, cd, 0, nodes)
		views := map[string][]string{}
		for i, n := range nodes {
			views[n.name] = prepareUntilReady(ctx, n, workloadClaim(ctx, cd, n, fmt.Sprintf("worker-%d", i), 0)).DeviceNodes
		}
		got := getDomain(Default, ctx, cd)
		Expect(got.Status.Cliques).To(HaveLen(2))
		for _, rack := range [][]*simNode{rackA, rackB} {
			ch := cliqueChannel(Default, got, rack[0].clique)
			for _, n := range rack {
				Expect(views[n.name]).To(Equal([]string{channelPath(ch)}), "node %s gets its clique's channel", n.name)
				By("the nodes file of " + n.name + " lists its own rack only")
				peers := daemon.CliquePeers(got, daemon.Peer{NodeName: n.name, IPAddress: n.podIP(0)}, n.clique)
				Expect(daemon.Addresses(peers)).To(ConsistOf(rack[0].podIP(0), rack[1].podIP(0)))
			}
		}
	})

	It("cleans up when the job ends and the domain is deleted: the DaemonSet, daemons, members and CDI specs go, no node is labeled with the domain", func() {
		nodes = newRack(ctx, "done", 2)
		cd := createDomain(ctx, "train", ns)
		followDaemonSet(ctx, cd, 0, nodes)
		var claims []*resourcev1.ResourceClaim
		for i, n := range nodes {
			c := workloadClaim(ctx, cd, n, fmt.Sprintf("worker-%d", i), 0)
			prepareUntilReady(ctx, n, c)
			claims = append(claims, c)
		}

		By("the job finishes: the kubelet unprepares the claims, the ResourceClaim controller drops the reservations")
		for i, n := range nodes {
			endJob(ctx, n, claims[i])
		}
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: computedomain.DaemonSetName(cd.UID)}, &appsv1.DaemonSet{})).
				To(Satisfy(apierrors.IsNotFound), "the DaemonSet outlived the workload")
			for _, n := range nodes {
				g.Expect(n.daemon(cd.UID)).To(BeNil(), "the daemon left %s", n.name)
				specs, err := cdi.NewWriter(n.cdiRoot, cdplugin.DefaultDriverName)
				g.Expect(err).NotTo(HaveOccurred())
				uids, err := specs.ClaimUIDs()
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(uids).To(BeEmpty())
			}
			var members v1beta1.ComputeDomainMemberList
			g.Expect(k8s.List(ctx, &members, client.InNamespace(operatorNamespace), client.MatchingLabels{v1beta1.ComputeDomainLabelKey: string(cd.UID)})).To(Succeed())
			g.Expect(members.Items).To(BeEmpty())
		}).WithTimeout(formed).WithPolling(poll).Should(Succeed())
		for _, n := range nodes {
			var node corev1.Node
			Expect(k8s.Get(ctx, client.ObjectKey{Name: n.name}, &node)).To(Succeed())
			for k, v := range node.Labels {
				Expect(k+"="+v).NotTo(ContainSubstring(string(cd.UID)), "node %s is labeled with the domain", n.name)
			}
		}

		By("the domain is deleted: it goes, with its finalizer done")
		Expect(k8s.Delete(ctx, cd)).To(Succeed())
		Eventually(func() bool {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(cd), &v1beta1.ComputeDomain{})
			return err != nil
		}).WithTimeout(formed).WithPolling(poll).Should(BeTrue())
	})
})
