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

package kueue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/nodeagent"
)

// domainReadyTimeout covers 16 pods binding after admission and the domain forming.
const domainReadyTimeout = 2 * time.Minute

// topologyStory: demo/kueue/computedomain-job.yaml, 16 pods of one GB200 tray each with the domain's channel and
// podset-required-topology on nvidia.com/gpu.clique, queued on the ClusterQueue nvl72 of demo/kueue/topology.yaml.
func topologyStory() {
	It("refuses a ComputeDomain job while Kueue's DRA quota is on: the channel claim template carries a device config", func(ctx SpecContext) {
		apply(ctx, "team-a", "demo/kueue/topology.yaml")
		apply(ctx, "team-a", "demo/kueue/computedomain-job.yaml")
		msg := expectHeld(ctx, "team-a", "nvl-job", "device config is not supported")
		Expect(msg).To(ContainSubstring("ResourceClaimTemplate nvl-channel"))
		GinkgoWriter.Printf("nvl-job refused: %s\n", msg)
		deleteJob(ctx, "team-a", "nvl-job")
		Eventually(ctx, func(g Gomega) {
			_, err := kc.client.BatchV1().Jobs("team-a").Get(ctx, "nvl-job", metav1.GetOptions{})
			g.Expect(err).To(HaveOccurred())
		}).WithTimeout(admitTimeout).Should(Succeed())
	})

	It("places the 16-tray job, with Kueue's DRA quota off, in the one clique with 16 free trays, where its domain becomes Ready", func(ctx SpecContext) {
		By("restarting Kueue with the gate DynamicResourceAllocation off: no DRA quota, so the channel template is not read")
		startKueue(ctx, map[string]bool{"DynamicResourceAllocation": false})

		By("keeping 3 trays of rack 0 and 2 of rack 1 busy with pods that take a GPU and 100 CPUs: only rack 1 has 16 free trays")
		busy := busyNamespace(ctx)
		busyTrays := map[string]bool{}
		for r, n := range map[int]int{0: 3, 1: 2} {
			for i := range n {
				node := tray(r, traysPerRack-1-i)
				occupyTray(ctx, busy, node)
				busyTrays[node] = true
			}
		}
		waitRunning(ctx, busy, len(busyTrays))

		start := time.Now()
		apply(ctx, "team-a", "demo/kueue/computedomain-job.yaml")
		expectAdmitted(ctx, "team-a", "nvl-job")
		admitted := time.Since(start)
		pods := expectRunning(ctx, "team-a", "nvl-job", 16)
		running := time.Since(start)
		cliques := map[string]int{}
		nodes := map[string]bool{}
		for _, p := range pods {
			Expect(busyTrays).NotTo(HaveKey(p.Spec.NodeName), "pod %s on a busy tray", p.Name)
			nodes[p.Spec.NodeName] = true
			cliques[cliqueOf(p.Spec.NodeName)]++
		}
		Expect(nodes).To(HaveLen(16), "one pod per tray")
		Expect(cliques).To(Equal(map[string]int{rackClique(1): 16}), "every pod in rack 1")

		By("the Workload carries Kueue's topology assignment: 16 trays of that clique")
		wl := workload(Default, ctx, "team-a", "nvl-job")
		levels, _, _ := unstructured.NestedSlice(wl.Object, "status", "admission", "podSetAssignments")
		Expect(levels).To(HaveLen(1))
		ta, found, _ := unstructured.NestedMap(levels[0].(map[string]any), "topologyAssignment")
		Expect(found).To(BeTrue(), "topologyAssignment in %v", levels[0])
		Expect(ta["levels"]).To(Equal([]any{"kubernetes.io/hostname"}))

		By("the domain becomes Ready as one IMEX ensemble in that clique")
		Eventually(ctx, func(g Gomega) {
			cd := &cdv1beta1.ComputeDomain{}
			g.Expect(kc.crClient.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "nvl-domain"}, cd)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(cd.Status.Conditions, cdv1beta1.ComputeDomainConditionReady)).To(BeTrue(), "Ready: %+v", cd.Status.Conditions)
			g.Expect(cd.Status.Cliques).To(HaveLen(1))
			g.Expect(cd.Status.Cliques[0].CliqueID).To(Equal(rackClique(1)))
		}).WithTimeout(domainReadyTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("nvl-job: admitted %.2fs, 16 pods running %.2fs, domain Ready %.2fs after creation\n",
			admitted.Seconds(), running.Seconds(), time.Since(start).Seconds())
		deleteJobsAndWait(ctx, "team-a", "nvl-job")
	})

	It("does not see a tray whose GPUs a pod without CPU requests holds: Kueue assigns a pod of the job there and it stays Pending", func(ctx SpecContext) {
		By("taking one GPU of tray 0 of rack 1 with a pod that asks for no CPU: rack 1 has 15 trays with 4 free GPUs, and 16 by the CPUs TAS counts")
		busy := busyNamespace(ctx)
		gpuOnly := tray(1, 0)
		occupyTrayGPUOnly(ctx, busy, gpuOnly)
		waitRunning(ctx, busy, 1)

		create(ctx, "team-a", renamed("demo/kueue/computedomain-job.yaml", "nvl-job-2", nil))
		expectAdmitted(ctx, "team-a", "nvl-job-2")
		Eventually(ctx, func(g Gomega) {
			pods := jobPods(g, ctx, "team-a", "nvl-job-2")
			g.Expect(pods).To(HaveLen(16))
			var assigned []string
			for _, p := range pods {
				assigned = append(assigned, p.Spec.NodeSelector["kubernetes.io/hostname"])
			}
			g.Expect(assigned).To(ContainElement(gpuOnly), "Kueue's topology assignment includes the tray whose GPUs are taken")
		}).WithTimeout(admitTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
		Consistently(ctx, func(g Gomega) {
			for _, p := range jobPods(g, ctx, "team-a", "nvl-job-2") {
				if p.Spec.NodeSelector["kubernetes.io/hostname"] == gpuOnly {
					g.Expect(p.Spec.NodeName).To(BeEmpty(), "the pod sent to %s cannot get 4 GPUs there", gpuOnly)
					g.Expect(p.Status.Phase).To(Equal(corev1.PodPending))
				}
			}
		}).WithTimeout(heldTime).WithPolling(200 * time.Millisecond).Should(Succeed())
		deleteJobsAndWait(ctx, "team-a", "nvl-job-2")
	})
}

// multiRackStory: a 32-tray ComputeDomain job queued in Kueue with Kueue's own slice annotations (a slice of 16
// pods per NVLink clique, podset-slice-required-topology) over the two racks, with DRA quota off (see
// topologyStory): Kueue's topology assignment and the domain's slices (2 × 16, each pod in its slice's PodGroup
// by its completion index) agree, so the job runs with ranks 0-15 in one rack and 16-31 in the other.
func multiRackStory() {
	It("places a 32-tray job with Kueue's slice annotations in the two racks, 16 consecutive ranks in each, where the domain's 2 slices form", func(ctx SpecContext) {
		By("freeing both racks of the busy pods of the stories before")
		nss, err := kc.client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, ns := range nss.Items {
			if strings.HasPrefix(ns.Name, "busy-") {
				Expect(kc.client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})).To(Succeed())
			}
		}
		Eventually(ctx, func(g Gomega) {
			pods, err := kc.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			for _, p := range pods.Items {
				g.Expect(p.Namespace).NotTo(HavePrefix("busy-"))
			}
		}).WithTimeout(admitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())

		objs := decodeFixture("demo/kueue/computedomain-job.yaml")
		for _, o := range objs {
			switch o.GetKind() {
			case "ComputeDomain":
				o.SetName("nvl-domain-32")
				Expect(unstructured.SetNestedField(o.Object, int64(32), "spec", "numNodes")).To(Succeed())
				Expect(unstructured.SetNestedField(o.Object, "nvl-channel-32", "spec", "channel", "resourceClaimTemplate", "name")).To(Succeed())
			case "ResourceClaimTemplate":
				o.SetName("tray-gpus-32")
			case "Job":
				o.SetName("nvl-job-32")
				Expect(unstructured.SetNestedField(o.Object, int64(32), "spec", "parallelism")).To(Succeed())
				Expect(unstructured.SetNestedField(o.Object, int64(32), "spec", "completions")).To(Succeed())
				Expect(unstructured.SetNestedStringMap(o.Object, map[string]string{
					"kueue.x-k8s.io/podset-slice-required-topology": "nvidia.com/gpu.clique",
					"kueue.x-k8s.io/podset-slice-size":              "16",
					nodeagent.RunDurationAnnotation:                 "2m",
				}, "spec", "template", "metadata", "annotations")).To(Succeed())
				Expect(unstructured.SetNestedSlice(o.Object, []any{
					map[string]any{"name": "gpus", "resourceClaimTemplateName": "tray-gpus-32"},
					map[string]any{"name": "imex-channel", "resourceClaimTemplateName": "nvl-channel-32"},
				}, "spec", "template", "spec", "resourceClaims")).To(Succeed())
			}
		}
		create(ctx, "team-a", objs)
		expectAdmitted(ctx, "team-a", "nvl-job-32")
		pods := expectRunning(ctx, "team-a", "nvl-job-32", 32)
		byRank := map[int]string{}
		for _, p := range pods {
			rank, err := strconv.Atoi(p.Labels["batch.kubernetes.io/job-completion-index"])
			Expect(err).NotTo(HaveOccurred())
			byRank[rank] = cliqueOf(p.Spec.NodeName)
		}
		for r := range 32 {
			Expect(byRank[r]).To(Equal(byRank[16*(r/16)]), "rank %d in the clique of its slice's first rank: %v", r, byRank)
		}
		Expect(byRank[0]).NotTo(Equal(byRank[16]), "the two slices in different racks: %v", byRank)

		By("the domain is Ready with an ensemble per rack, and its slices name the racks Kueue chose")
		Eventually(ctx, func(g Gomega) {
			cd := &cdv1beta1.ComputeDomain{}
			g.Expect(kc.crClient.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "nvl-domain-32"}, cd)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(cd.Status.Conditions, cdv1beta1.ComputeDomainConditionReady)).To(BeTrue(), "Ready: %+v", cd.Status.Conditions)
			g.Expect(cd.Status.Cliques).To(HaveLen(2))
			g.Expect(cd.Status.Slices).To(HaveLen(2))
			g.Expect(cd.Status.Slices[0].CliqueID).To(Equal(byRank[0]))
			g.Expect(cd.Status.Slices[1].CliqueID).To(Equal(byRank[16]))
		}).WithTimeout(domainReadyTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
		deleteJobsAndWait(ctx, "team-a", "nvl-job-32")
	})
}

// tray is the name of tray n of rack r.
func tray(r, n int) string { return fmt.Sprintf("gb200-r%d-n%02d", r, n) }

// rackClique is the NVLink clique of rack r.
func rackClique(r int) string {
	for _, n := range kc.sim.Nodes() {
		if n.Rack == r {
			return n.CliqueID
		}
	}
	Fail(fmt.Sprintf("no rack %d", r))
	return ""
}

func cliqueOf(node string) string {
	for _, n := range kc.sim.Nodes() {
		if n.Name == node {
			return n.CliqueID
		}
	}
	return ""
}

// busyNamespace is a namespace Kueue does not manage (no LocalQueue, no team).
func busyNamespace(ctx context.Context) string {
	GinkgoHelper()
	ns, err := kc.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "busy-"}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return ns.Name
}

// occupyTray runs a pod on the tray holding one GPU (demo/gpu-claim.yaml, pinned to the node) and 100 of its
// 144 CPUs: the GPU so that a 4-GPU pod no longer fits there, the CPUs so that Kueue's topology-aware scheduling,
// which sees node resources and not DRA devices, counts the tray as taken.
func occupyTray(ctx context.Context, ns, node string) {
	GinkgoHelper()
	objs := decodeFixture("demo/gpu-claim.yaml")
	Expect(objs).To(HaveLen(2))
	pod := objs[1]
	pod.SetName("busy-" + node)
	Expect(unstructured.SetNestedStringMap(pod.Object, map[string]string{"kubernetes.io/hostname": node}, "spec", "nodeSelector")).To(Succeed())
	ctrs, _, err := unstructured.NestedSlice(pod.Object, "spec", "containers")
	Expect(err).NotTo(HaveOccurred())
	Expect(unstructured.SetNestedStringMap(ctrs[0].(map[string]any), map[string]string{"cpu": "100"}, "resources", "requests")).To(Succeed())
	Expect(unstructured.SetNestedSlice(pod.Object, ctrs, "spec", "containers")).To(Succeed())
	create(ctx, ns, objs)
}

// occupyTrayGPUOnly runs a pod on the tray holding one GPU and asking for no CPU or memory, as most GPU pods do.
func occupyTrayGPUOnly(ctx context.Context, ns, node string) {
	GinkgoHelper()
	objs := decodeFixture("demo/gpu-claim.yaml")
	Expect(objs).To(HaveLen(2))
	objs[1].SetName("gpu-only-" + node)
	Expect(unstructured.SetNestedStringMap(objs[1].Object, map[string]string{"kubernetes.io/hostname": node}, "spec", "nodeSelector")).To(Succeed())
	create(ctx, ns, objs)
}

// waitRunning waits until n pods of ns run.
func waitRunning(ctx context.Context, ns string, n int) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		pods, err := kc.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
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
