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

package stories

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:staticcheck // Ginkgo's DSL, as in the suites
	. "github.com/onsi/gomega"    //nolint:staticcheck // Gomega's DSL, as in the suites
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
)

// Named timeouts of the multi-rack stories.
const (
	// slicedBindTimeout covers placing and binding a 64-node job.
	slicedBindTimeout = 2 * time.Minute
	// slicedReadyTimeout covers a 64-node domain forming 4 IMEX ensembles.
	slicedReadyTimeout = 3 * time.Minute
	// replacementTimeout covers a lost pod's replacement being placed and running.
	replacementTimeout = 2 * time.Minute
)

// MultiRackStories declares the multi-rack stories (issue 24's acceptance) for the cluster *pc placing as mode
// says: jobs larger than one rack, from the unmodified NVIDIA-style fixture, land in whole-rack slices of 16
// consecutive completion indices, all slices or none.
func MultiRackStories(pc **Cluster, mode Mode) bool {
	return Describe(fmt.Sprintf("ComputeDomain jobs larger than one NVLink clique, placed in whole-rack slices (4 racks × 18 GB200 trays, %s)", mode.Name), Ordered, func() {
		var c *Cluster
		BeforeAll(func() { c = *pc })

		It("runs an unmodified NVIDIA-style 64-node job in exactly 4 racks, 16 consecutive ranks in each, and its domain becomes Ready with an ensemble per rack", func(ctx SpecContext) {
			ns := c.Namespace(ctx)
			c.CreateJob(ctx, ns, UnmodifiedJob, JobOptions{Nodes: 64, RunFor: 2 * time.Minute})
			ranks := c.RankCliques(ctx, ns, 64)
			ExpectSlices(ranks, 64, 16)

			By("all 64 pods run, and the domain is Ready with 4 ensembles, each rack's slice shown with its channel")
			Eventually(ctx, func(g Gomega) {
				g.Expect(c.RunningPods(g, ctx, ns)).To(Equal(64))
				cd := c.Domain(g, ctx, ns)
				g.Expect(meta.IsStatusConditionTrue(cd.Status.Conditions, cdv1beta1.ComputeDomainConditionReady)).To(BeTrue(), "Ready: %+v", cd.Status.Conditions)
				g.Expect(cd.Status.Cliques).To(HaveLen(4))
				for _, cl := range cd.Status.Cliques {
					g.Expect(cl.Channel).NotTo(BeNil(), "clique %s has a channel", cl.CliqueID)
				}
				expectSliceStatus(g, cd, ranks)
				placement := meta.FindStatusCondition(cd.Status.Conditions, cdv1beta1.ComputeDomainConditionPlacementGuaranteed)
				g.Expect(placement).NotTo(BeNil())
				g.Expect(placement.Reason).To(Equal(mode.SlicedReason), placement.Message)
			}).WithTimeout(slicedReadyTimeout).WithPolling(200*time.Millisecond).Should(Succeed(), func() string { return simcluster.PodsSummary(ctx, c.Client, ns) })
			c.DeleteNamespace(ctx, ns)
		})

		It("binds no pod of a 64-node job while only 3 racks have 16 free trays, says why with the numbers, and starts it whole once a rack frees", func(ctx SpecContext) {
			busy := c.Namespace(ctx)
			for n := range 3 {
				c.OccupyTray(ctx, busy, Tray(3, n))
			}
			c.WaitRunning(ctx, busy, 3)

			ns := c.Namespace(ctx)
			c.CreateJob(ctx, ns, UnmodifiedJob, JobOptions{Nodes: 64, RunFor: time.Minute})
			Eventually(ctx, func(g Gomega) {
				ready := meta.FindStatusCondition(c.Domain(g, ctx, ns).Status.Conditions, cdv1beta1.ComputeDomainConditionReady)
				g.Expect(ready).NotTo(BeNil())
				g.Expect(ready.Reason).To(Equal(cdv1beta1.ComputeDomainReasonGangUnschedulable))
				g.Expect(ready.Message).To(ContainSubstring(mode.NoRacksMessage))
			}).WithTimeout(gangBindTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
			Consistently(ctx, func(g Gomega) {
				g.Expect(c.Bound(g, ctx, ns)).To(BeEmpty(), "no pod of the job binds while a slice has no rack")
			}).WithTimeout(gangHeldTime).WithPolling(200 * time.Millisecond).Should(Succeed())

			By("freeing rack 3: the job starts whole, a slice in each rack")
			c.DeleteNamespace(ctx, busy)
			ExpectSlices(c.RankCliques(ctx, ns, 64), 64, 16)
			c.DeleteNamespace(ctx, ns)
		})

		It("places two 32-node jobs submitted together in two racks each, disjoint, with consecutive ranks; a 16-node job in one rack", func(ctx SpecContext) {
			a, b := c.Namespace(ctx), c.Namespace(ctx)
			holdings := c.WatchHoldings(ctx, a, b)
			c.CreateJob(ctx, a, UnmodifiedJob, JobOptions{Nodes: 32, RunFor: time.Minute})
			c.CreateJob(ctx, b, UnmodifiedJob, JobOptions{Nodes: 32, RunFor: time.Minute})
			inA, inB := c.RankCliques(ctx, a, 32), c.RankCliques(ctx, b, 32)
			ExpectSlices(inA, 32, 16)
			ExpectSlices(inB, 32, 16)
			holdings.Stop()
			Expect(holdings.SharedCliques()).To(BeEmpty(), "pods of the two jobs in one rack at the same time\n%s", holdings)
			c.DeleteNamespace(ctx, a)
			c.DeleteNamespace(ctx, b)

			one := c.Namespace(ctx)
			c.CreateJob(ctx, one, UnmodifiedJob, JobOptions{Nodes: 16, RunFor: time.Minute})
			Expect(c.BoundCliques(ctx, one, 16)).To(HaveLen(1), "a 16-node job in one rack")
			c.DeleteNamespace(ctx, one)
		})

		It("runs the replacement of a pod whose tray was lost on a free tray of its slice's rack, and the domain recovers", func(ctx SpecContext) {
			ns := c.Namespace(ctx)
			c.CreateJob(ctx, ns, UnmodifiedJob, JobOptions{Nodes: 64, RunFor: 5 * time.Minute, BackoffLimit: 4})
			ranks := c.RankCliques(ctx, ns, 64)
			ExpectSlices(ranks, 64, 16)
			Eventually(ctx, func(g Gomega) {
				g.Expect(c.RunningPods(g, ctx, ns)).To(Equal(64))
				g.Expect(meta.IsStatusConditionTrue(c.Domain(g, ctx, ns).Status.Conditions, cdv1beta1.ComputeDomainConditionReady)).To(BeTrue())
			}).WithTimeout(slicedReadyTimeout).WithPolling(200*time.Millisecond).Should(Succeed(), func() string { return simcluster.PodsSummary(ctx, c.Client, ns) })

			// A tray of rack 1 that the suite's other stories never occupy one by one (they take trays 15-17 of
			// every rack, and all of racks 2 and 3), so losing it for good leaves them their racks.
			lost := c.podOnRack(ctx, ns, 1, 15)
			rank := lost.Labels[completionIndex]
			clique := ranks[mustAtoi(rank)]
			By(fmt.Sprintf("losing tray %s (rank %s, clique %s): its agent stops, the node is cordoned, the pod force-deleted as taint eviction would", lost.Spec.NodeName, rank, clique))
			_, err := c.Client.CoreV1().Nodes().Patch(ctx, lost.Spec.NodeName, types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Sim.StopNodeAgent(lost.Spec.NodeName)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { c.removeLostNode(ctx, lost.Spec.NodeName) })
			Expect(c.Client.CoreV1().Pods(ns).Delete(ctx, lost.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})).To(Succeed())

			By("the Job's replacement for rank " + rank + " runs on another tray of the same rack, and the domain is Ready again")
			cliques := c.nodeCliques()
			Eventually(ctx, func(g Gomega) {
				pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: completionIndex + "=" + rank})
				g.Expect(err).NotTo(HaveOccurred())
				var running []corev1.Pod
				for _, p := range pods.Items {
					if p.UID != lost.UID && p.Status.Phase == corev1.PodRunning {
						running = append(running, p)
					}
				}
				g.Expect(running).To(HaveLen(1))
				g.Expect(running[0].Spec.NodeName).NotTo(Equal(lost.Spec.NodeName))
				g.Expect(cliques[running[0].Spec.NodeName]).To(Equal(clique), "the replacement runs in its slice's clique")
				cd := c.Domain(g, ctx, ns)
				g.Expect(meta.IsStatusConditionTrue(cd.Status.Conditions, cdv1beta1.ComputeDomainConditionReady)).To(BeTrue(), "Ready: %+v", cd.Status.Conditions)
				for _, n := range cd.Status.Nodes {
					g.Expect(n.Name).NotTo(Equal(lost.Spec.NodeName), "the lost tray left the domain")
				}
				g.Expect(cd.Status.Cliques).To(HaveLen(4))
			}).WithTimeout(replacementTimeout).WithPolling(200*time.Millisecond).Should(Succeed(), func() string { return simcluster.PodsSummary(ctx, c.Client, ns) })
			c.DeleteNamespace(ctx, ns)
		})
	})
}

// completionIndex is an Indexed Job's pod index label.
const completionIndex = "batch.kubernetes.io/job-completion-index"

func mustAtoi(s string) int {
	GinkgoHelper()
	n, err := strconv.Atoi(s)
	Expect(err).NotTo(HaveOccurred())
	return n
}

// nodeCliques maps every node to its NVLink clique.
func (c *Cluster) nodeCliques() map[string]string {
	out := map[string]string{}
	for _, spec := range c.Sim.Nodes() {
		out[spec.Name] = spec.CliqueID
	}
	return out
}

// RankCliques waits until n pods of the gang job in ns are bound and maps each completion index to its clique.
func (c *Cluster) RankCliques(ctx context.Context, ns string, n int) map[int]string {
	GinkgoHelper()
	cliques := c.nodeCliques()
	out := map[int]string{}
	Eventually(ctx, func(g Gomega) {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: gangJobSelector})
		g.Expect(err).NotTo(HaveOccurred())
		clear(out)
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				out[mustAtoi(p.Labels[completionIndex])] = cliques[p.Spec.NodeName]
			}
		}
		g.Expect(out).To(HaveLen(n))
	}).WithTimeout(slicedBindTimeout).WithPolling(200*time.Millisecond).Should(Succeed(), func() string { return simcluster.PodsSummary(ctx, c.Client, ns) })
	return out
}

// ExpectSlices fails unless the n ranks are in n/size cliques, ranks [k·size, (k+1)·size) all in one clique and
// no two blocks in the same one.
func ExpectSlices(ranks map[int]string, n, size int) {
	GinkgoHelper()
	Expect(ranks).To(HaveLen(n))
	seen := map[string]int{}
	for first := 0; first < n; first += size {
		clique := ranks[first]
		Expect(clique).NotTo(BeEmpty(), "rank %d has a clique", first)
		for r := first; r < first+size; r++ {
			Expect(ranks[r]).To(Equal(clique), "rank %d is in the clique of its slice's first rank %d: %s", r, first, describeRanks(ranks))
		}
		prev, dup := seen[clique]
		Expect(dup).To(BeFalse(), "ranks %d.. and %d.. share clique %s: %s", prev, first, clique, describeRanks(ranks))
		seen[clique] = first
	}
	AddReportEntry("slices", describeRanks(ranks))
}

// describeRanks lists the rank ranges per clique.
func describeRanks(ranks map[int]string) string {
	byClique := map[string][]int{}
	for r, c := range ranks {
		byClique[c] = append(byClique[c], r)
	}
	var parts []string
	for c, rs := range byClique {
		sort.Ints(rs)
		parts = append(parts, fmt.Sprintf("%s: %d ranks, %d-%d", c, len(rs), rs[0], rs[len(rs)-1]))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// expectSliceStatus checks the domain's status.slices against where the ranks run: 4 slices of 16, each in the
// clique of its ranks, all bound, with the domain's channel there.
func expectSliceStatus(g Gomega, cd *cdv1beta1.ComputeDomain, ranks map[int]string) {
	channels := map[string]int32{}
	for _, cl := range cd.Status.Cliques {
		if cl.Channel != nil {
			channels[cl.CliqueID] = *cl.Channel
		}
	}
	g.Expect(cd.Status.Slices).To(HaveLen(4), "%+v", cd.Status.Slices)
	for i, s := range cd.Status.Slices {
		g.Expect(s.Index).To(BeEquivalentTo(i))
		g.Expect(s.FirstRank).To(BeEquivalentTo(16 * i))
		g.Expect(s.Size).To(BeEquivalentTo(16))
		g.Expect(s.CliqueID).To(Equal(ranks[16*i]), "slice %d's clique", i)
		g.Expect(s.BoundPods).To(BeEquivalentTo(16))
		g.Expect(s.Channel).NotTo(BeNil(), "slice %d's channel", i)
		g.Expect(*s.Channel).To(Equal(channels[s.CliqueID]))
	}
}

// RunningPods counts the gang job's Running pods in ns.
func (c *Cluster) RunningPods(g Gomega, ctx context.Context, ns string) int {
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: gangJobSelector})
	g.Expect(err).NotTo(HaveOccurred())
	n := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// podOnRack is a running pod of the gang job in ns on a tray of rack r numbered below below.
func (c *Cluster) podOnRack(ctx context.Context, ns string, r, below int) corev1.Pod {
	GinkgoHelper()
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: gangJobSelector})
	Expect(err).NotTo(HaveOccurred())
	for _, p := range pods.Items {
		for n := range below {
			if p.Spec.NodeName == Tray(r, n) && p.Status.Phase == corev1.PodRunning {
				return p
			}
		}
	}
	Fail(fmt.Sprintf("no running pod of %s on trays 0-%d of rack %d", ns, below-1, r))
	return corev1.Pod{}
}

// removeLostNode takes a node whose agent was stopped out of the cluster (simcluster's RemoveNode: powered
// off, its Node deleted, its pods force-deleted).
func (c *Cluster) removeLostNode(ctx context.Context, name string) {
	GinkgoHelper()
	Expect(c.Sim.RemoveNode(ctx, name)).To(Succeed())
}
