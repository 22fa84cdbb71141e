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

package computedomain_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/finalizer"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

const (
	rack1 = "5f1e0c9a-aaaa-bbbb-cccc-000000000001.1"
	rack2 = "5f1e0c9a-aaaa-bbbb-cccc-000000000001.2"
)

var _ = Describe("ComputeDomain controller", func() {
	var (
		ctx context.Context
		ns  string
	)

	BeforeEach(func() {
		ctx = context.Background()
		namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "team-"}}
		Expect(k8s.Create(ctx, namespace)).To(Succeed())
		ns = namespace.Name
	})

	It("gives a new domain its finalizer and its workload claim template, and nothing per domain in the operator namespace", func() {
		cd := createDomain(ctx, "training", ns)

		By("the workload claim template, in the domain's namespace, owned by the domain, carrying the domain's UID")
		rct := &resourcev1.ResourceClaimTemplate{}
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "training-channel"}, rct)
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
		Expect(metav1.IsControlledBy(rct, cd)).To(BeTrue(), "owner references %v", rct.OwnerReferences)
		Expect(rct.Spec.Spec.Devices.Requests[0].Exactly.DeviceClassName).To(Equal("compute-domain-default-channel.nvidia.com"))
		decoded, err := v1beta1.DecodeConfig(rct.Spec.Spec.Devices.Config[0].Opaque.Parameters.Raw)
		Expect(err).NotTo(HaveOccurred())
		Expect(decoded).To(Equal(&v1beta1.ComputeDomainChannelConfig{
			TypeMeta: metav1.TypeMeta{APIVersion: "resource.nvidia.com/v1beta1", Kind: "ComputeDomainChannelConfig"},
			DomainID: string(cd.UID), AllocationMode: v1beta1.AllocationModeSingle,
		}))

		Expect(rct.Spec.ObjectMeta.Labels).To(HaveKeyWithValue(v1beta1.WorkloadClaimLabelKey, string(cd.UID)),
			"claims generated from the template must carry the domain's UID")
		By("the finalizer and a status that says the domain waits for its workload")
		Eventually(func(g Gomega) {
			got := getDomain(g, ctx, cd)
			g.Expect(got.Finalizers).To(ContainElement(finalizer.Name))
			g.Expect(got.Status.Status).To(Equal(v1beta1.ComputeDomainStatusNotReady))
			g.Expect(condition(got, v1beta1.ComputeDomainConditionReady)).To(HaveField("Reason", v1beta1.ComputeDomainReasonNoWorkload))
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())

		By("no object in the operator namespace: the nodes' long-lived IMEX daemons serve the domain")
		Consistently(func(g Gomega) {
			var templates resourcev1.ResourceClaimTemplateList
			g.Expect(k8s.List(ctx, &templates, client.InNamespace(operatorNamespace))).To(Succeed())
			g.Expect(templates.Items).To(BeEmpty())
		}).WithTimeout(consistently).WithPolling(poll).Should(Succeed())
	})

	It("makes a domain Ready with per-clique indices and a channel once its daemons report ready", func() {
		cd := createDomain(ctx, "job", ns)
		nodes := []string{"gb200-r1-n04", "gb200-r1-n01", "gb200-r1-n03", "gb200-r1-n02"}

		By("four pods bound, their nodes' daemons registering, not ready yet")
		for i, n := range nodes {
			joinNode(ctx, cd, utiltesting.MakeIMEXNode(n, operatorNamespace).Clique(rack1).IP(fmt.Sprintf("127.0.1.%d", i+1)).
				NotReady(v1beta1.IMEXNodeConditionIMEXReady, "Starting", "waiting for peers"))
		}
		registered := map[string]int32{}
		Eventually(func(g Gomega) {
			got := getDomain(g, ctx, cd)
			g.Expect(got.Status.Nodes).To(HaveLen(4))
			g.Expect(condition(got, v1beta1.ComputeDomainConditionDaemonsReady)).To(HaveField("Reason", v1beta1.ComputeDomainReasonDaemonsNotReady))
			g.Expect(condition(got, v1beta1.ComputeDomainConditionDegraded)).To(HaveField("Status", metav1.ConditionFalse))
			g.Expect(got.Status.Cliques).To(ConsistOf(HaveField("Channel", Not(BeNil()))))
			for _, n := range got.Status.Nodes {
				registered[n.Name] = n.Index
			}
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
		// The clique's ensemble gave each node the lowest free index when it came.
		Expect(slices.Sorted(maps.Values(registered))).To(Equal([]int32{0, 1, 2, 3}))

		By("the daemons turning ready")
		for i, n := range nodes {
			joinNode(ctx, cd, utiltesting.MakeIMEXNode(n, operatorNamespace).Clique(rack1).IP(fmt.Sprintf("127.0.1.%d", i+1)).Ready())
		}
		Eventually(func(g Gomega) {
			got := getDomain(g, ctx, cd)
			g.Expect(got.Status.Status).To(Equal(v1beta1.ComputeDomainStatusReady))
			g.Expect(condition(got, v1beta1.ComputeDomainConditionReady)).To(HaveField("Status", metav1.ConditionTrue))
			g.Expect(got.Status.ReadyNodes).To(Equal(int32(4)))
			indices := map[string]int32{}
			for _, n := range got.Status.Nodes {
				g.Expect(n.Status).To(Equal(v1beta1.ComputeDomainStatusReady))
				g.Expect(n.CliqueID).To(Equal(rack1))
				g.Expect(n.IPAddress).To(HavePrefix("127.0.1."))
				indices[n.Name] = n.Index
			}
			// Indices were assigned when the daemons registered and did not move.
			g.Expect(indices).To(Equal(registered))
			g.Expect(got.Status.Cliques).To(HaveLen(1))
			g.Expect(*got.Status.Cliques[0].Channel).To(BeNumerically(">=", 1))
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())

		By("one daemon's IMEX process dying: the domain is Degraded and names the node")
		joinNode(ctx, cd, utiltesting.MakeIMEXNode("gb200-r1-n03", operatorNamespace).Clique(rack1).IP("127.0.1.3").
			NotReady(v1beta1.IMEXNodeConditionIMEXReady, "ProcessExited", "nvidia-imex exited; restarting"))
		Eventually(func(g Gomega) {
			got := getDomain(g, ctx, cd)
			degraded := condition(got, v1beta1.ComputeDomainConditionDegraded)
			g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(degraded.Reason).To(Equal(v1beta1.ComputeDomainReasonDaemonLost))
			g.Expect(degraded.Message).To(ContainSubstring("gb200-r1-n03"))
			g.Expect(degraded.Message).To(ContainSubstring("ProcessExited"))
			g.Expect(got.Status.Status).To(Equal(v1beta1.ComputeDomainStatusNotReady))
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())

		By("the daemon recovering")
		joinNode(ctx, cd, utiltesting.MakeIMEXNode("gb200-r1-n03", operatorNamespace).Clique(rack1).IP("127.0.1.3").Ready())
		Eventually(func(g Gomega) {
			got := getDomain(g, ctx, cd)
			g.Expect(condition(got, v1beta1.ComputeDomainConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
			g.Expect(got.Status.Status).To(Equal(v1beta1.ComputeDomainStatusReady))
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
	})

	It("gives two domains in one clique different channels, and a domain across two racks one ensemble per rack", func() {
		a := createDomain(ctx, "a", ns)
		b := createDomain(ctx, "b", ns)
		joinNode(ctx, a, utiltesting.MakeIMEXNode("r1-n01", operatorNamespace).Clique(rack1).IP("127.0.2.1").Ready())
		joinNode(ctx, b, utiltesting.MakeIMEXNode("r1-n01", operatorNamespace).Clique(rack1).IP("127.0.2.1").Ready())
		joinNode(ctx, b, utiltesting.MakeIMEXNode("r2-n01", operatorNamespace).Clique(rack2).IP("127.0.3.1").Ready())

		chA := readyChannels(ctx, a, 1)
		chB := readyChannels(ctx, b, 2)
		Expect(chA).To(HaveKey(rack1))
		Expect(chB).To(HaveKey(rack1))
		Expect(chB).To(HaveKey(rack2))
		Expect(chA[rack1]).NotTo(Equal(chB[rack1]), "two live domains in clique %s share channel %d", rack1, chA[rack1])
		got := &v1beta1.ComputeDomain{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), got)).To(Succeed())
		for _, n := range got.Status.Nodes {
			Expect(n.Index).To(Equal(ensembleIndices(ctx, n.CliqueID)[n.Name]), "each node keeps its index in its rack's ensemble: %+v", got.Status.Nodes)
		}
	})

	It("gives a clique's channel back when the domain's workload leaves that clique, and keeps it while a claim there is allocated", func() {
		const roam = "5f1e.77"
		roamer := createDomain(ctx, "roamer", ns)
		joinNode(ctx, roamer, utiltesting.MakeIMEXNode("r1-n41", operatorNamespace).Clique(rack1).IP("127.0.7.1").Ready())
		away := joinNode(ctx, roamer, utiltesting.MakeIMEXNode("roam-n01", operatorNamespace).Clique(roam).IP("127.0.7.2").Ready())
		held := readyChannels(ctx, roamer, 2)[roam]
		Expect(held).To(Equal(computedomain.FirstChannel), "the first domain in a fresh clique gets its lowest channel")

		By("the pod in the other clique done but its claim still allocated: the channel stays the domain's")
		done := away.DeepCopy()
		done.Status.ReservedFor = nil
		Expect(k8s.Status().Patch(ctx, done, client.MergeFrom(away))).To(Succeed())
		waiter := createDomain(ctx, "waiter", ns)
		joinNode(ctx, waiter, utiltesting.MakeIMEXNode("roam-n02", operatorNamespace).Clique(roam).IP("127.0.7.3").Ready())
		Expect(readyChannels(ctx, waiter, 1)[roam]).NotTo(Equal(held), "channel %d handed out while the roamer's claim is allocated in clique %s", held, roam)

		By("the claim gone: the roamer lists only its first clique, and the next domain in the other gets the channel back")
		Expect(k8s.Delete(ctx, done)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getDomain(g, ctx, roamer)
			g.Expect(got.Status.Cliques).To(HaveLen(1))
			g.Expect(got.Status.Cliques[0].CliqueID).To(Equal(rack1))
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
		newcomer := createDomain(ctx, "newcomer", ns)
		joinNode(ctx, newcomer, utiltesting.MakeIMEXNode("roam-n03", operatorNamespace).Clique(roam).IP("127.0.7.4").Ready())
		Expect(readyChannels(ctx, newcomer, 1)[roam]).To(Equal(held), "the channel the roamer gave back in clique %s", roam)
	})

	It("hands the channel of a deleted domain to the next domain only when its workload has let go of it", func() {
		first := createDomain(ctx, "first", ns)
		claim := joinNode(ctx, first, utiltesting.MakeIMEXNode("r1-n07", operatorNamespace).Clique(rack1).IP("127.0.4.7").Ready())
		released := readyChannels(ctx, first, 1)[rack1]
		workloadRCT := workloadTemplate(ctx, first)

		By("deleting the domain while its workload still runs")
		Expect(k8s.Delete(ctx, first)).To(Succeed())
		// envtest runs no garbage collector: the workload template goes through its owner reference.
		Expect(metav1.IsControlledBy(workloadRCT, first)).To(BeTrue())

		By("a new domain in that clique meanwhile getting another channel: pod-0 still runs with the old one")
		second := createDomain(ctx, "second", ns)
		joinNode(ctx, second, utiltesting.MakeIMEXNode("r1-n08", operatorNamespace).Clique(rack1).IP("127.0.4.8").Ready())
		Expect(readyChannels(ctx, second, 1)[rack1]).NotTo(Equal(released), "channel %d handed out while a claim of the deleted domain is reserved", released)
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(first), &v1beta1.ComputeDomain{})).To(Succeed(), "the deleted domain keeps its finalizer while its channel is held")

		By("the workload ending: the domain goes and the next domain receives the released channel, the lowest free one")
		done := claim.DeepCopy()
		done.Status.ReservedFor = nil
		Expect(k8s.Status().Patch(ctx, done, client.MergeFrom(claim))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(first), &v1beta1.ComputeDomain{}))
		}).WithTimeout(reconciled).WithPolling(poll).Should(BeTrue(), "the domain is stuck on its finalizer")
		next := createDomain(ctx, "next", ns)
		joinNode(ctx, next, utiltesting.MakeIMEXNode("r1-n07", operatorNamespace).Clique(rack1).IP("127.0.4.7").Ready())
		Expect(readyChannels(ctx, next, 1)[rack1]).To(BeNumerically("<=", released))
	})

	It("keeps every domain's channel across a controller restart and gives a new domain a free one", func() {
		old := []*v1beta1.ComputeDomain{createDomain(ctx, "old-1", ns), createDomain(ctx, "old-2", ns)}
		held := map[int32]string{}
		for i, cd := range old {
			joinNode(ctx, cd, utiltesting.MakeIMEXNode(fmt.Sprintf("r1-n2%d", i), operatorNamespace).Clique(rack1).IP("127.0.6.1").Ready())
			held[readyChannels(ctx, cd, 1)[rack1]] = cd.Name
		}

		By("restarting the controller: its in-memory allocator starts empty and is rebuilt from the statuses")
		stop()
		startController()

		fresh := createDomain(ctx, "fresh", ns)
		joinNode(ctx, fresh, utiltesting.MakeIMEXNode("r1-n29", operatorNamespace).Clique(rack1).IP("127.0.6.9").Ready())
		ch := readyChannels(ctx, fresh, 1)[rack1]
		Expect(held).NotTo(HaveKey(ch), "the new domain got channel %d, which %s holds", ch, held[ch])
		for _, cd := range old {
			got := &v1beta1.ComputeDomain{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cd), got)).To(Succeed())
			Expect(held).To(HaveKeyWithValue(*got.Status.Cliques[0].Channel, cd.Name), "a restart moved %s's channel", cd.Name)
		}
	})

	It("forms a 64-node domain across four racks as one ensemble per rack, without conflicts", func() {
		writesBefore, conflictsBefore := writeCounts()
		cd := createDomain(ctx, "big", ns)
		racks := []string{"5f1e.10", "5f1e.11", "5f1e.12", "5f1e.13"}
		for r, rack := range racks {
			for n := range 16 {
				joinNode(ctx, cd, utiltesting.MakeIMEXNode(fmt.Sprintf("big-r%d-n%02d", r, n), operatorNamespace).Clique(rack).
					IP(fmt.Sprintf("127.1.%d.%d", r, n+1)).Ready())
			}
		}
		channels := readyChannels(ctx, cd, 64)
		Expect(channels).To(HaveLen(4))
		got := &v1beta1.ComputeDomain{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cd), got)).To(Succeed())
		perRack := map[string][]int32{}
		for _, n := range got.Status.Nodes {
			perRack[n.CliqueID] = append(perRack[n.CliqueID], n.Index)
		}
		for _, rack := range racks {
			Expect(slices.Sorted(slices.Values(perRack[rack]))).To(Equal([]int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}), "indices of rack %s", rack)
		}
		writesAfter, conflictsAfter := writeCounts()
		GinkgoWriter.Printf("64-node domain: %v controller writes (finalizer, 3 creates, status writes)\n", writesAfter-writesBefore)
		Expect(conflictsAfter - conflictsBefore).To(BeZero())
		// At most one status write per IMEXNode event (each is written twice: spec, then ready status) plus the
		// finalizer and the claim template; the work queue batches events, so usually far fewer.
		Expect(writesAfter - writesBefore).To(BeNumerically("<=", 2*64+4))
	})

	It("leaves a user's claim template of the same name alone and says why the domain is not Ready", func() {
		foreign := &resourcev1.ResourceClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken-channel"},
			Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
				Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com"}}},
			}}},
		}
		Expect(k8s.Create(ctx, foreign)).To(Succeed())
		_, conflictsBefore := writeCounts()
		cd := createDomain(ctx, "taken", ns)
		Eventually(func(g Gomega) {
			got := getDomain(g, ctx, cd)
			ready := condition(got, v1beta1.ComputeDomainConditionReady)
			g.Expect(ready.Reason).To(Equal(v1beta1.ComputeDomainReasonClaimTemplateConflict))
			g.Expect(ready.Message).To(ContainSubstring(ns + "/taken-channel"))
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
		// The first pass creates the template without reading it first and meets the foreign one (HTTP 409);
		// the passes after it read the API server first (TestClaimTemplateCalls counts them).
		_, conflictsAfter := writeCounts()
		Expect(conflictsAfter-conflictsBefore).To(BeNumerically("<=", 1), "conflicts for a domain blocked by a foreign claim template")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(foreign), foreign)).To(Succeed())
		Expect(foreign.OwnerReferences).To(BeEmpty())
		Expect(foreign.Spec.Spec.Devices.Requests[0].Exactly.DeviceClassName).To(Equal("gpu.nvidia.com"))
	})

	It("counts its API writes without conflicts", func() {
		writesBefore, conflictsBefore := writeCounts()
		cd := createDomain(ctx, "counted", ns)
		joinNode(ctx, cd, utiltesting.MakeIMEXNode("r1-n11", operatorNamespace).Clique(rack1).IP("127.0.5.1").Ready())
		readyChannels(ctx, cd, 1)
		writes, conflicts := writeCounts()
		Expect(writes - writesBefore).To(BeNumerically(">", 0))
		Expect(conflicts - conflictsBefore).To(BeZero())
	})
})

// allocateWorkloadClaim does what the ResourceClaim controller and the scheduler do for a pod that uses
// the workload claim template: create a claim from the template (its labels and annotations included) and
// allocate a channel slot on node, reserved for the pod.
func allocateWorkloadClaim(ctx context.Context, rct *resourcev1.ResourceClaimTemplate, pod, node string) *resourcev1.ResourceClaim {
	GinkgoHelper()
	claim := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: rct.Namespace, Name: pod + "-channel",
			Labels: rct.Spec.Labels, Annotations: rct.Spec.Annotations,
		},
		Spec: rct.Spec.Spec,
	}
	Expect(k8s.Create(ctx, claim)).To(Succeed())
	claim.Status.Allocation = &resourcev1.AllocationResult{
		Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
			Request: computedomain.ChannelRequestName, Driver: computedomain.DefaultDriverName, Pool: node, Device: "channel-0",
		}}},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}},
	}
	claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: pod, UID: types.UID(pod + "-uid")}}
	Expect(k8s.Status().Update(ctx, claim)).To(Succeed())
	return claim
}

func createDomain(ctx context.Context, name, ns string) *v1beta1.ComputeDomain {
	GinkgoHelper()
	cd := utiltesting.MakeComputeDomain(name, ns).Channel(name + "-channel").Obj()
	Expect(k8s.Create(ctx, cd)).To(Succeed())
	return cd
}

func getDomain(g Gomega, ctx context.Context, cd *v1beta1.ComputeDomain) *v1beta1.ComputeDomain {
	got := &v1beta1.ComputeDomain{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cd), got)).To(Succeed())
	return got
}

func condition(cd *v1beta1.ComputeDomain, t string) metav1.Condition {
	if c := meta.FindStatusCondition(cd.Status.Conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// readyChannels waits until the domain is Ready with the given number of ready nodes and returns its
// channel per clique.
func readyChannels(ctx context.Context, cd *v1beta1.ComputeDomain, nodes int32) map[string]int32 {
	GinkgoHelper()
	channels := map[string]int32{}
	Eventually(func(g Gomega) {
		got := getDomain(g, ctx, cd)
		g.Expect(got.Status.Status).To(Equal(v1beta1.ComputeDomainStatusReady), "conditions: %+v", got.Status.Conditions)
		g.Expect(got.Status.ReadyNodes).To(Equal(nodes))
		for _, c := range got.Status.Cliques {
			g.Expect(c.Channel).NotTo(BeNil())
			channels[c.CliqueID] = *c.Channel
		}
	}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
	return channels
}

// ensembleIndices are the nodes' indices in the clique's ensemble (its IMEXClique).
func ensembleIndices(ctx context.Context, clique string) map[string]int32 {
	GinkgoHelper()
	q := &v1beta1.IMEXClique{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: v1beta1.IMEXCliqueName(clique)}, q)).To(Succeed())
	out := map[string]int32{}
	for _, n := range q.Status.Nodes {
		out[n.Name] = n.Index
	}
	return out
}

// joinNode stands in for the scheduler and the node's long-lived IMEX daemon: a pod of cd's workload bound to
// the IMEXNode's node (its claim from the domain's template allocated there, once), and the node's daemon
// reporting as w says. It returns the pod's claim.
func joinNode(ctx context.Context, cd *v1beta1.ComputeDomain, w *utiltesting.IMEXNodeWrapper) *resourcev1.ResourceClaim {
	GinkgoHelper()
	reportIMEXNode(ctx, w.Obj())
	rct := workloadTemplate(ctx, cd)
	claim := &resourcev1.ResourceClaim{}
	pod := cd.Name + "-" + w.Name
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: cd.Namespace, Name: pod + "-channel"}, claim); err == nil {
		return claim
	}
	return allocateWorkloadClaim(ctx, rct, pod, w.Name)
}

// labelNodeClique makes the Node as its GPU plugin leaves it: labeled with its NVLink clique.
func labelNodeClique(ctx context.Context, name, clique string) {
	GinkgoHelper()
	node := &corev1.Node{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: name}, node); apierrors.IsNotFound(err) {
		node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1beta1.CliqueNodeLabelKey: clique}}}
		Expect(k8s.Create(ctx, node)).To(Succeed())
		return
	} else {
		Expect(err).NotTo(HaveOccurred())
	}
	if node.Labels[v1beta1.CliqueNodeLabelKey] == clique {
		return
	}
	before := node.DeepCopy()
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	node.Labels[v1beta1.CliqueNodeLabelKey] = clique
	Expect(k8s.Patch(ctx, node, client.MergeFrom(before))).To(Succeed())
}

// reportIMEXNode writes n as the node's long-lived daemon does (server-side apply of spec, then status, with
// the daemon's field owner), owned by the node's daemon pod, which it runs first at n's address if needed, on a
// Node its GPU plugin labeled with n's clique.
func reportIMEXNode(ctx context.Context, n *v1beta1.IMEXNode) {
	GinkgoHelper()
	labelNodeClique(ctx, n.Spec.NodeName, n.Spec.CliqueID)
	pod := &corev1.Pod{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "imex-" + n.Name}, pod); err != nil {
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "get daemon pod: %v", err)
		pod = runPod(ctx, "imex-"+n.Name, n.Spec.NodeName, n.Spec.IPAddress, cliqueDaemonLabels())
	} else if pod.Status.PodIP != n.Spec.IPAddress {
		// The node's daemon restarted at another address.
		pod.Status.PodIP = n.Spec.IPAddress
		pod.Status.PodIPs = []corev1.PodIP{{IP: n.Spec.IPAddress}}
		Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
	}
	applyIMEXNodeOwnedBy(ctx, n.Name, n.Spec.CliqueID, n.Spec.IPAddress, pod)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&n.Status)
	Expect(err).NotTo(HaveOccurred())
	for _, c := range n.Status.Conditions {
		Expect(strings.TrimSpace(c.Reason)).NotTo(BeEmpty())
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1beta1.GroupVersion.String(), "kind": "IMEXNode",
		"metadata": map[string]any{"name": n.Name, "namespace": operatorNamespace},
		"status":   u,
	}}
	Expect(k8s.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(v1beta1.IMEXNodeFieldOwner), client.ForceOwnership)).To(Succeed())
}

// writeCounts sums the controller's API writes and 409s so far.
func writeCounts() (writes, conflicts float64) {
	GinkgoHelper()
	families, err := registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "computedomain_controller_api_writes_total":
				writes += m.GetCounter().GetValue()
			case "computedomain_controller_api_conflicts_total":
				conflicts += m.GetCounter().GetValue()
			}
		}
	}
	return writes, conflicts
}
