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
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
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

	It("gives a new domain its finalizer, its workload and daemon claim templates and a DaemonSet that follows the workload's nodes", func() {
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

		By("the daemon claim template and the DaemonSet in the operator namespace")
		daemonRCT := &resourcev1.ResourceClaimTemplate{}
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: computedomain.DaemonClaimTemplateName(cd.UID)}, daemonRCT)
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
		Expect(daemonRCT.Spec.Spec.Devices.Requests[0].Exactly.DeviceClassName).To(Equal("compute-domain-daemon.nvidia.com"))
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

		By("no DaemonSet while no workload claim is allocated")
		dsKey := client.ObjectKey{Namespace: operatorNamespace, Name: computedomain.DaemonSetName(cd.UID)}
		Expect(apierrors.IsNotFound(k8s.Get(ctx, dsKey, &appsv1.DaemonSet{}))).To(BeTrue())

		By("two pods bound: the DaemonSet runs a daemon on exactly their nodes")
		claimN1 := allocateWorkloadClaim(ctx, rct, "pod-0", "gb200-r1-n01")
		claimN2 := allocateWorkloadClaim(ctx, rct, "pod-1", "gb200-r1-n02")
		daemonNodes := func(g Gomega) []string {
			ds := &appsv1.DaemonSet{}
			g.Expect(k8s.Get(ctx, dsKey, ds)).To(Succeed())
			g.Expect(ds.Spec.UpdateStrategy.Type).To(Equal(appsv1.OnDeleteDaemonSetStrategyType))
			g.Expect(*ds.Spec.Template.Spec.ResourceClaims[0].ResourceClaimTemplateName).To(Equal(daemonRCT.Name))
			var nodes []string
			for _, term := range ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				nodes = append(nodes, term.MatchFields[0].Values...)
			}
			return nodes
		}
		Eventually(daemonNodes).WithTimeout(reconciled).WithPolling(poll).Should(Equal([]string{"gb200-r1-n01", "gb200-r1-n02"}))

		By("the pod on n02 done: the ResourceClaim controller drops its reservation, the daemon leaves n02")
		claimN2.Status.ReservedFor = nil
		Expect(k8s.Status().Update(ctx, claimN2)).To(Succeed())
		Eventually(daemonNodes).WithTimeout(reconciled).WithPolling(poll).Should(Equal([]string{"gb200-r1-n01"}))

		By("the last pod gone: the DaemonSet goes")
		Expect(k8s.Delete(ctx, claimN1)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, dsKey, &appsv1.DaemonSet{}))
		}).WithTimeout(reconciled).WithPolling(poll).Should(BeTrue(), "the DaemonSet outlived the workload")
	})

	It("makes a domain Ready with per-clique indices and a channel once its daemons report ready", func() {
		cd := createDomain(ctx, "job", ns)
		nodes := []string{"gb200-r1-n04", "gb200-r1-n01", "gb200-r1-n03", "gb200-r1-n02"}

		By("four daemons registering, not ready yet")
		for i, n := range nodes {
			applyMember(ctx, utiltesting.MakeComputeDomainMember(cd, n, operatorNamespace).Clique(rack1).IP(fmt.Sprintf("127.0.1.%d", i+1)).
				NotReady(v1beta1.ComputeDomainMemberConditionIMEXReady, "Starting", "waiting for peers").Obj())
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
		// The daemons registered one after another: each took the lowest free index when it came.
		Expect(slices.Sorted(maps.Values(registered))).To(Equal([]int32{0, 1, 2, 3}))

		By("the daemons turning ready")
		for i, n := range nodes {
			applyMember(ctx, utiltesting.MakeComputeDomainMember(cd, n, operatorNamespace).Clique(rack1).IP(fmt.Sprintf("127.0.1.%d", i+1)).Ready().Obj())
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
		applyMember(ctx, utiltesting.MakeComputeDomainMember(cd, "gb200-r1-n03", operatorNamespace).Clique(rack1).IP("127.0.1.3").
			NotReady(v1beta1.ComputeDomainMemberConditionIMEXReady, "ProcessExited", "nvidia-imex exited; restarting").Obj())
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
		applyMember(ctx, utiltesting.MakeComputeDomainMember(cd, "gb200-r1-n03", operatorNamespace).Clique(rack1).IP("127.0.1.3").Ready().Obj())
		Eventually(func(g Gomega) {
			got := getDomain(g, ctx, cd)
			g.Expect(condition(got, v1beta1.ComputeDomainConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
			g.Expect(got.Status.Status).To(Equal(v1beta1.ComputeDomainStatusReady))
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
	})

	It("ignores member records that disagree with the domain's daemon pods: one no daemon pod owns, an address that is not its daemon's", func() {
		cd := createDomain(ctx, "guarded", ns)
		applyMember(ctx, utiltesting.MakeComputeDomainMember(cd, "r1-n11", operatorNamespace).Clique(rack1).IP("127.0.7.1").Ready().Obj())
		applyMember(ctx, utiltesting.MakeComputeDomainMember(cd, "r1-n12", operatorNamespace).Clique(rack1).IP("127.0.7.2").Ready().Obj())
		readyChannels(ctx, cd, 2)

		By("a compromised node's daemon, of no pod of the domain, writing its own record into the domain")
		applyMemberRecord(ctx, utiltesting.MakeComputeDomainMember(cd, "r1-n13", operatorNamespace).Clique(rack1).IP("127.0.7.3").Ready().Obj())
		By("a member's record rewritten to another address than its daemon pod's")
		n12 := &corev1.Pod{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "imex-" + string(cd.UID)[:8] + "-r1-n12"}, n12)).To(Succeed())
		applyMemberRecord(ctx, utiltesting.MakeComputeDomainMember(cd, "r1-n12", operatorNamespace).Clique(rack1).IP("127.0.7.66").
			OwnedBy(n12.Name, n12.UID).Ready().Obj())
		Eventually(func(g Gomega) {
			var events eventsv1.EventList
			g.Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
			var notes []string
			for _, e := range events.Items {
				if e.Reason == v1beta1.ComputeDomainReasonMemberRecordRefused && e.Regarding.Name == cd.Name {
					notes = append(notes, e.Note)
				}
			}
			g.Expect(notes).To(ContainElement(And(ContainSubstring("r1-n13"), ContainSubstring("not owned by an IMEX daemon pod of the domain"))))
			g.Expect(notes).To(ContainElement(ContainSubstring("address 127.0.7.66 is not the address 127.0.7.2")))
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
		Consistently(func(g Gomega) {
			got := getDomain(g, ctx, cd)
			nodes := map[string]string{}
			for _, n := range got.Status.Nodes {
				nodes[n.Name] = n.IPAddress
			}
			g.Expect(nodes).To(Equal(map[string]string{"r1-n11": "127.0.7.1"}), "only the record that agrees with its daemon pod counts")
		}).WithTimeout(consistently).WithPolling(poll).Should(Succeed())
	})

	It("gives two domains in one clique different channels, and a domain across two racks one ensemble per rack", func() {
		a := createDomain(ctx, "a", ns)
		b := createDomain(ctx, "b", ns)
		applyMember(ctx, utiltesting.MakeComputeDomainMember(a, "r1-n01", operatorNamespace).Clique(rack1).IP("127.0.2.1").Ready().Obj())
		applyMember(ctx, utiltesting.MakeComputeDomainMember(b, "r1-n01", operatorNamespace).Clique(rack1).IP("127.0.2.1").Ready().Obj())
		applyMember(ctx, utiltesting.MakeComputeDomainMember(b, "r2-n01", operatorNamespace).Clique(rack2).IP("127.0.3.1").Ready().Obj())

		chA := readyChannels(ctx, a, 1)
		chB := readyChannels(ctx, b, 2)
		Expect(chA).To(HaveKey(rack1))
		Expect(chB).To(HaveKey(rack1))
		Expect(chB).To(HaveKey(rack2))
		Expect(chA[rack1]).NotTo(Equal(chB[rack1]), "two live domains in clique %s share channel %d", rack1, chA[rack1])
		got := &v1beta1.ComputeDomain{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), got)).To(Succeed())
		for _, n := range got.Status.Nodes {
			Expect(n.Index).To(Equal(int32(0)), "each rack's ensemble indexes its nodes from 0: %+v", got.Status.Nodes)
		}
	})

	It("removes the DaemonSet and daemon claim template of a deleted domain at once, and hands its channel to the next domain only when its workload has let go of it", func() {
		first := createDomain(ctx, "first", ns)
		applyMember(ctx, utiltesting.MakeComputeDomainMember(first, "r1-n07", operatorNamespace).Clique(rack1).IP("127.0.4.7").Ready().Obj())
		released := readyChannels(ctx, first, 1)[rack1]
		workloadRCT := &resourcev1.ResourceClaimTemplate{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "first-channel"}, workloadRCT)).To(Succeed())
		claim := allocateWorkloadClaim(ctx, workloadRCT, "pod-0", "r1-n07")
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: computedomain.DaemonSetName(first.UID)}}
		daemonRCT := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: computedomain.DaemonClaimTemplateName(first.UID)}}
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(ds), ds) }).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())

		By("deleting the domain while its workload still runs: its daemons and records go at once")
		Expect(k8s.Delete(ctx, first)).To(Succeed())
		Eventually(func(g Gomega) {
			for _, obj := range []client.Object{ds, daemonRCT} {
				g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj))).To(BeTrue(), "%T %s remains", obj, obj.GetName())
			}
			var members v1beta1.ComputeDomainMemberList
			g.Expect(k8s.List(ctx, &members, client.InNamespace(operatorNamespace), client.MatchingLabels{v1beta1.ComputeDomainLabelKey: string(first.UID)})).To(Succeed())
			g.Expect(members.Items).To(BeEmpty())
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
		// envtest runs no garbage collector: the workload template goes through its owner reference.
		Expect(metav1.IsControlledBy(workloadRCT, first)).To(BeTrue())

		By("a new domain in that clique meanwhile getting another channel: pod-0 still runs with the old one")
		second := createDomain(ctx, "second", ns)
		applyMember(ctx, utiltesting.MakeComputeDomainMember(second, "r1-n08", operatorNamespace).Clique(rack1).IP("127.0.4.8").Ready().Obj())
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
		applyMember(ctx, utiltesting.MakeComputeDomainMember(next, "r1-n07", operatorNamespace).Clique(rack1).IP("127.0.4.7").Ready().Obj())
		Expect(readyChannels(ctx, next, 1)[rack1]).To(BeNumerically("<=", released))
	})

	It("deletes the DaemonSet, daemon claim template and member records of a domain that vanished without its finalizer", func() {
		lost := createDomain(ctx, "lost", ns)
		applyMember(ctx, utiltesting.MakeComputeDomainMember(lost, "r1-n09", operatorNamespace).Clique(rack1).IP("127.0.4.9").Ready().Obj())
		workloadRCT := &resourcev1.ResourceClaimTemplate{}
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "lost-channel"}, workloadRCT) }).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
		allocateWorkloadClaim(ctx, workloadRCT, "pod-lost", "r1-n09")
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: computedomain.DaemonSetName(lost.UID)}}
		daemonRCT := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: computedomain.DaemonClaimTemplateName(lost.UID)}}
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(ds), ds) }).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())

		By("someone removing the domain's finalizer by hand and deleting it")
		got := &v1beta1.ComputeDomain{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(lost), got)).To(Succeed())
		Expect(k8s.Patch(ctx, got, client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`)))).To(Succeed())
		Expect(k8s.Delete(ctx, got)).To(Succeed())

		Eventually(func(g Gomega) {
			for _, obj := range []client.Object{ds, daemonRCT} {
				g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj))).To(BeTrue(), "%T %s of the vanished domain remains", obj, obj.GetName())
			}
			var members v1beta1.ComputeDomainMemberList
			g.Expect(k8s.List(ctx, &members, client.InNamespace(operatorNamespace), client.MatchingLabels{v1beta1.ComputeDomainLabelKey: string(lost.UID)})).To(Succeed())
			g.Expect(members.Items).To(BeEmpty(), "member records of the vanished domain remain")
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
	})

	It("keeps every domain's channel across a controller restart and gives a new domain a free one", func() {
		old := []*v1beta1.ComputeDomain{createDomain(ctx, "old-1", ns), createDomain(ctx, "old-2", ns)}
		held := map[int32]string{}
		for i, cd := range old {
			applyMember(ctx, utiltesting.MakeComputeDomainMember(cd, fmt.Sprintf("r1-n2%d", i), operatorNamespace).Clique(rack1).IP("127.0.6.1").Ready().Obj())
			held[readyChannels(ctx, cd, 1)[rack1]] = cd.Name
		}

		By("restarting the controller: its in-memory allocator starts empty and is rebuilt from the statuses")
		stop()
		startController()

		fresh := createDomain(ctx, "fresh", ns)
		applyMember(ctx, utiltesting.MakeComputeDomainMember(fresh, "r1-n29", operatorNamespace).Clique(rack1).IP("127.0.6.9").Ready().Obj())
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
				applyMember(ctx, utiltesting.MakeComputeDomainMember(cd, fmt.Sprintf("r%d-n%02d", r, n), operatorNamespace).Clique(rack).
					IP(fmt.Sprintf("127.1.%d.%d", r, n+1)).Ready().Obj())
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
		// At most one status write per member event (each member is written twice: registered, ready) plus
		// the finalizer and three creates; the work queue batches events, so usually far fewer (44 here).
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
		cd := createDomain(ctx, "taken", ns)
		Eventually(func(g Gomega) {
			got := getDomain(g, ctx, cd)
			ready := condition(got, v1beta1.ComputeDomainConditionReady)
			g.Expect(ready.Reason).To(Equal(v1beta1.ComputeDomainReasonClaimTemplateConflict))
			g.Expect(ready.Message).To(ContainSubstring(ns + "/taken-channel"))
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(foreign), foreign)).To(Succeed())
		Expect(foreign.OwnerReferences).To(BeEmpty())
		Expect(foreign.Spec.Spec.Devices.Requests[0].Exactly.DeviceClassName).To(Equal("gpu.nvidia.com"))
	})

	It("counts its API writes without conflicts", func() {
		cd := createDomain(ctx, "counted", ns)
		applyMember(ctx, utiltesting.MakeComputeDomainMember(cd, "r1-n11", operatorNamespace).Clique(rack1).IP("127.0.5.1").Ready().Obj())
		readyChannels(ctx, cd, 1)
		writes, conflicts := writeCounts()
		Expect(writes).To(BeNumerically(">", 0))
		Expect(conflicts).To(BeZero())
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

// applyMember writes a member record as the node's daemon does: server-side apply of spec and status
// with the daemon's field owner.
func applyMember(ctx context.Context, m *v1beta1.ComputeDomainMember) {
	GinkgoHelper()
	pod := runDaemonPod(ctx, m)
	m = m.DeepCopy()
	m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}}
	applyMemberRecord(ctx, m)
}

// runDaemonPod stands in for the DaemonSet controller and the kubelet: the domain's IMEX daemon pod on the
// member's node, with the member's address as its pod IP, as the daemon that writes the record runs.
func runDaemonPod(ctx context.Context, m *v1beta1.ComputeDomainMember) *corev1.Pod {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: m.Namespace,
			Name:      "imex-" + m.Spec.DomainUID[:8] + "-" + m.Spec.NodeName,
			Labels:    map[string]string{computedomain.AppLabelKey: computedomain.DaemonAppLabelValue, v1beta1.ComputeDomainLabelKey: m.Spec.DomainUID},
			Annotations: map[string]string{
				computedomain.v1beta1.DomainNamespaceAnnotation: m.Spec.DomainNamespace, computedomain.v1beta1.DomainNameAnnotation: m.Spec.DomainName,
			},
		},
		Spec: corev1.PodSpec{
			NodeName:                     m.Spec.NodeName,
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "daemon", Image: "daemon:test"}},
		},
	}
	err := k8s.Create(ctx, pod)
	if apierrors.IsAlreadyExists(err) {
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
	} else {
		Expect(err).NotTo(HaveOccurred())
	}
	if m.Spec.IPAddress == "" || pod.Status.PodIP == m.Spec.IPAddress {
		return pod
	}
	pod.Status.PodIP = m.Spec.IPAddress
	pod.Status.PodIPs = []corev1.PodIP{{IP: m.Spec.IPAddress}}
	Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
	return pod
}

// applyMemberRecord writes a member record as a daemon does (server-side apply of spec, then status), owned by
// whatever m says (applyMember: its daemon pod).
func applyMemberRecord(ctx context.Context, m *v1beta1.ComputeDomainMember) {
	GinkgoHelper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(m)
	Expect(err).NotTo(HaveOccurred())
	obj := &unstructured.Unstructured{Object: u}
	unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
	status, _, _ := unstructured.NestedMap(obj.Object, "status")
	unstructured.RemoveNestedField(obj.Object, "status")
	owner := client.FieldOwner(v1beta1.ComputeDomainMemberFieldOwner)
	Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), owner, client.ForceOwnership)).To(Succeed())

	statusObj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": obj.GetAPIVersion(), "kind": obj.GetKind(),
		"metadata": map[string]any{"name": obj.GetName(), "namespace": obj.GetNamespace()},
		"status":   status,
	}}
	for _, c := range m.Status.Conditions {
		Expect(strings.TrimSpace(c.Reason)).NotTo(BeEmpty())
	}
	Expect(k8s.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(statusObj), client.FieldOwner(v1beta1.ComputeDomainMemberFieldOwner), client.ForceOwnership)).To(Succeed())
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
