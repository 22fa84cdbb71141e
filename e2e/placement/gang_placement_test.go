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

package placement

import (
	"context"
	"fmt"
	"os"
	"sort"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
)

var _ = Describe("Gang placement of ComputeDomain jobs inside one NVLink clique (4 racks × 18 GB200 trays, Workload API on)", Ordered, func() {
	// busy holds the pods that keep a tray's GPUs in use.
	var busy string

	BeforeAll(func(ctx SpecContext) {
		By("keeping 2 trays busy in rack 0 and 3 in every other rack: only rack 0 has 16 free trays")
		busy = pc.namespace(ctx)
		for r := range racks {
			first := traysPerRack - 3
			if r == 0 {
				first = traysPerRack - 2
			}
			for n := first; n < traysPerRack; n++ {
				pc.occupyTray(ctx, busy, tray(r, n))
			}
		}
		pc.waitRunning(ctx, busy, 2+3*(racks-1))
	})

	It("lands a 16-node job entirely in the one rack with 16 free trays, where its domain forms", func(ctx SpecContext) {
		ns := pc.namespace(ctx)
		pc.createGangJob(ctx, ns, 16)
		cliques := pc.boundCliques(ctx, ns, 16)
		Expect(cliques).To(Equal(map[string]int{rackClique(0): 16}), "every pod in rack 0")

		By("the domain becomes Ready as one IMEX ensemble in that clique, and says its placement is guaranteed")
		Eventually(ctx, func(g Gomega) {
			cd := pc.domain(g, ctx, ns)
			g.Expect(meta.IsStatusConditionTrue(cd.Status.Conditions, cdv1beta1.ComputeDomainConditionReady)).To(BeTrue(), "Ready: %+v", cd.Status.Conditions)
			g.Expect(cd.Status.Cliques).To(HaveLen(1))
			g.Expect(cd.Status.Cliques[0].CliqueID).To(Equal(rackClique(0)))
			g.Expect(meta.IsStatusConditionTrue(cd.Status.Conditions, cdv1beta1.ComputeDomainConditionPlacementGuaranteed)).To(BeTrue())
		}).WithTimeout(jobTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
		pc.waitJobDone(ctx, ns)
	})

	It("binds no pod of a 16-node job while no rack has 16 free trays, and the domain says why", func(ctx SpecContext) {
		By("taking one more tray of rack 0: every rack has 15 free trays")
		pc.occupyTray(ctx, busy, tray(0, traysPerRack-3))
		pc.waitRunning(ctx, busy, 3*racks)

		ns := pc.namespace(ctx)
		pc.createGangJob(ctx, ns, 16)
		Eventually(ctx, func(g Gomega) {
			ready := meta.FindStatusCondition(pc.domain(g, ctx, ns).Status.Conditions, cdv1beta1.ComputeDomainConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Reason).To(Equal(cdv1beta1.ComputeDomainReasonGangUnschedulable))
			g.Expect(ready.Message).To(ContainSubstring("no NVLink clique for the gang of 16 pods"))
		}).WithTimeout(gangBindTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
		Consistently(ctx, func(g Gomega) {
			g.Expect(pc.bound(g, ctx, ns)).To(BeEmpty(), "no pod of the gang binds")
		}).WithTimeout(gangHeldTime).WithPolling(200 * time.Millisecond).Should(Succeed())
	})

	It("places two 10-node jobs submitted together in two different racks, each whole", func(ctx SpecContext) {
		// Every rack has 15 free trays (the spec before): no rack holds both.
		a, b := pc.namespace(ctx), pc.namespace(ctx)
		pc.createGangJob(ctx, a, 10)
		pc.createGangJob(ctx, b, 10)
		inA, inB := pc.boundCliques(ctx, a, 10), pc.boundCliques(ctx, b, 10)
		Expect(inA).To(HaveLen(1), "job A in one rack")
		Expect(inB).To(HaveLen(1), "job B in one rack")
		Expect(keys(inA)).NotTo(Equal(keys(inB)), "the two jobs in different racks")
	})

	It("refuses a 20-node domain that no rack can hold: no PodGroup, no pod binds, and the domain says why", func(ctx SpecContext) {
		ns := pc.namespace(ctx)
		pc.createGangJob(ctx, ns, 20)
		Eventually(ctx, func(g Gomega) {
			c := meta.FindStatusCondition(pc.domain(g, ctx, ns).Status.Conditions, cdv1beta1.ComputeDomainConditionPlacementGuaranteed)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(cdv1beta1.ComputeDomainReasonExceedsClique))
			g.Expect(c.Message).To(ContainSubstring("has 18 nodes"))
		}).WithTimeout(gangBindTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
		Consistently(ctx, func(g Gomega) {
			g.Expect(pc.bound(g, ctx, ns)).To(BeEmpty(), "no pod of the refused gang binds")
		}).WithTimeout(gangHeldTime).WithPolling(200 * time.Millisecond).Should(Succeed())
	})

	It("runs three 10-node jobs racing for two racks without a deadlock: the third waits whole for a rack", func(ctx SpecContext) {
		By("filling racks 2 and 3: only racks 0 and 1 have free trays, 15 each")
		for r := 2; r < racks; r++ {
			for n := range traysPerRack - 3 {
				pc.occupyTray(ctx, busy, tray(r, n))
			}
		}
		pc.waitRunning(ctx, busy, racks*traysPerRack-2*15)

		jobs := []string{pc.namespace(ctx), pc.namespace(ctx), pc.namespace(ctx)}
		for _, ns := range jobs {
			pc.createGangJob(ctx, ns, 10)
		}
		// Every job completes, each inside one rack; three cannot run at once on two racks of 15, so one of
		// them ran in a rack after another job there had finished, as a whole.
		used := map[string]int{}
		for _, ns := range jobs {
			pc.waitJobDone(ctx, ns)
			cliques := pc.boundCliques(ctx, ns, 10)
			Expect(cliques).To(HaveLen(1), "job %s in one rack: %v", ns, cliques)
			for c := range cliques {
				used[c]++
			}
		}
		Expect(keys(used)).To(ConsistOf(rackClique(0), rackClique(1)), "the three jobs ran in the two racks with free trays")
	})
})

// tray is the name of tray n of rack r.
func tray(r, n int) string { return fmt.Sprintf("gb200-r%d-n%02d", r, n) }

// rackClique is the NVLink clique of rack r.
func rackClique(r int) string {
	for _, n := range pc.sim.Nodes() {
		if n.Rack == r {
			return n.CliqueID
		}
	}
	Fail(fmt.Sprintf("no rack %d", r))
	return ""
}

func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// namespace creates a namespace for one spec.
func (pc cluster) namespace(ctx context.Context) string {
	GinkgoHelper()
	ns, err := pc.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gang-"}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return ns.Name
}

// occupyTray runs a pod holding one GPU of the tray (demo/gpu-claim.yaml, pinned to the node), so a 4-GPU
// pod no longer fits there.
func (pc cluster) occupyTray(ctx context.Context, ns, node string) {
	GinkgoHelper()
	objs := decodeFixture("demo/gpu-claim.yaml")
	Expect(objs).To(HaveLen(2))
	pod := objs[1]
	pod.SetName("busy-" + node)
	Expect(unstructured.SetNestedStringMap(pod.Object, map[string]string{"kubernetes.io/hostname": node}, "spec", "nodeSelector")).To(Succeed())
	_, err := pc.applier.Create(ctx, ns, objs)
	Expect(err).NotTo(HaveOccurred())
}

// waitRunning waits until n pods of ns run.
func (pc cluster) waitRunning(ctx context.Context, ns string, n int) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		pods, err := pc.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		g.Expect(running).To(Equal(n))
	}).WithTimeout(podStartTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
}

// createGangJob creates demo/computedomain-gang-job.yaml in ns, resized to nodes (spec.numNodes, and the
// Job's parallelism and completions): the domain first, the Job once the controller has looked at the domain
// (its PodGroup made, or refused). Pods created before their PodGroup exists are held, as they should be, but
// the ResourceClaim controller then retries them with backoff ("get PodGroup for Pod: not found"), which
// delayed the scheduler's first look at the gang by 10-25 s in this simulator (docs/design/computedomains.md).
func (pc cluster) createGangJob(ctx context.Context, ns string, nodes int64) {
	GinkgoHelper()
	objs := decodeFixture("demo/computedomain-gang-job.yaml")
	for _, o := range objs {
		switch o.GetKind() {
		case "ComputeDomain":
			Expect(unstructured.SetNestedField(o.Object, nodes, "spec", "numNodes")).To(Succeed())
		case "Job":
			Expect(unstructured.SetNestedField(o.Object, nodes, "spec", "parallelism")).To(Succeed())
			Expect(unstructured.SetNestedField(o.Object, nodes, "spec", "completions")).To(Succeed())
		}
	}
	var job []*unstructured.Unstructured
	var rest []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Job" {
			job = append(job, o)
		} else {
			rest = append(rest, o)
		}
	}
	_, err := pc.applier.Create(ctx, ns, rest)
	Expect(err).NotTo(HaveOccurred())
	Eventually(ctx, func(g Gomega) {
		c := meta.FindStatusCondition(pc.domain(g, ctx, ns).Status.Conditions, cdv1beta1.ComputeDomainConditionPlacementGuaranteed)
		g.Expect(c).NotTo(BeNil())
	}).WithTimeout(gangBindTimeout).WithPolling(50 * time.Millisecond).Should(Succeed())
	_, err = pc.applier.Create(ctx, ns, job)
	Expect(err).NotTo(HaveOccurred())
}

// domain reads the gang job's domain.
func (pc cluster) domain(g Gomega, ctx context.Context, ns string) *cdv1beta1.ComputeDomain {
	cd := &cdv1beta1.ComputeDomain{}
	g.Expect(pc.crClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gang-domain"}, cd)).To(Succeed())
	return cd
}

// bound maps the bound pods of the gang job in ns to their nodes.
func (pc cluster) bound(g Gomega, ctx context.Context, ns string) map[string]string {
	pods, err := pc.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=gang-job"})
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			out[p.Name] = p.Spec.NodeName
		}
	}
	return out
}

// boundCliques waits until n pods of the gang job in ns are bound and counts them per NVLink clique.
func (pc cluster) boundCliques(ctx context.Context, ns string, n int) map[string]int {
	GinkgoHelper()
	var bound map[string]string
	Eventually(ctx, func(g Gomega) {
		bound = pc.bound(g, ctx, ns)
		g.Expect(bound).To(HaveLen(n), func() string { return pc.podsSummary(ctx, ns) })
	}).WithTimeout(gangBindTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	cliques := map[string]int{}
	nodes := map[string]string{}
	for _, spec := range pc.sim.Nodes() {
		nodes[spec.Name] = spec.CliqueID
	}
	for _, node := range bound {
		cliques[nodes[node]]++
	}
	return cliques
}

// waitJobDone waits until the gang job in ns completed and its pods' claims are gone, so its trays are free.
func (pc cluster) waitJobDone(ctx context.Context, ns string) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		job, err := pc.client.BatchV1().Jobs(ns).Get(ctx, "gang-job", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(job.Status.Succeeded).To(Equal(*job.Spec.Completions))
		claims, err := pc.client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(claims.Items).To(BeEmpty())
	}).WithTimeout(jobTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
}

func (pc cluster) podsSummary(ctx context.Context, ns string) string {
	return simcluster.PodsSummary(ctx, pc.client, ns)
}

// decodeFixture reads a demo manifest.
func decodeFixture(manifest string) []*unstructured.Unstructured {
	GinkgoHelper()
	data, err := os.ReadFile(pc.repoRoot + "/" + manifest)
	Expect(err).NotTo(HaveOccurred())
	objs, err := simcluster.DecodeManifests(data)
	Expect(err).NotTo(HaveOccurred())
	return objs
}
