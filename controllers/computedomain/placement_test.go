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

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
	"github.com/computedomain-operator/computedomain-operator/internal/workloadapi"
)

var _ = Describe("Placement of a domain's workload through the Workload API", func() {
	var (
		ctx context.Context
		ns  string
	)

	BeforeEach(func() {
		ctx = context.Background()
		namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "team-"}}
		Expect(k8s.Create(ctx, namespace)).To(Succeed())
		ns = namespace.Name
		// A rack of four nodes, so a 4-node gang fits in one clique.
		for i := range 4 {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
				Name:   fmt.Sprintf("%s-n%d", ns, i),
				Labels: map[string]string{v1beta1.CliqueNodeLabelKey: ns + ".0"},
			}}
			Expect(k8s.Create(ctx, node)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, node))).To(Succeed()) })
		}
	})

	podGroup := func(g Gomega, cd *v1beta1.ComputeDomain) (client.Object, workloadapi.Observed) {
		pg := workloadapi.NewPodGroup()
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: cd.Namespace, Name: v1beta1.ComputeDomainPodGroupName(cd)}, pg)).To(Succeed())
		obs, err := workloadapi.Observe(pg)
		g.Expect(err).NotTo(HaveOccurred())
		return pg, obs
	}

	It("gives a 4-node domain a PodGroup of its name: a gang of 4 in one clique, owned by the domain, and says PlacementGuaranteed", func() {
		cd := utiltesting.MakeComputeDomain("gang", ns).Channel("gang-channel").NumNodes(4).Obj()
		Expect(k8s.Create(ctx, cd)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getDomain(g, ctx, cd)
			placement := condition(got, v1beta1.ComputeDomainConditionPlacementGuaranteed)
			g.Expect(placement.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(placement.Reason).To(Equal(v1beta1.ComputeDomainReasonCliqueGang))
			g.Expect(placement.Message).To(ContainSubstring("podGroupName: gang"))
			pg, obs := podGroup(g, cd)
			g.Expect(obs).To(Equal(workloadapi.Observed{ControllerUID: got.UID, Gang: true, MinCount: 4, TopologyKey: v1beta1.CliqueNodeLabelKey}))
			g.Expect(pg.GetLabels()).To(HaveKeyWithValue(v1beta1.ComputeDomainLabelKey, string(got.UID)))
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
	})

	It("sets the gang size back when someone changes it", func() {
		cd := utiltesting.MakeComputeDomain("resized", ns).Channel("resized-channel").NumNodes(4).Obj()
		Expect(k8s.Create(ctx, cd)).To(Succeed())
		var pg client.Object
		Eventually(func(g Gomega) { pg, _ = podGroup(g, cd) }).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
		shrunk, err := workloadapi.WithMinCount(pg, 1)
		Expect(err).NotTo(HaveOccurred())
		Expect(k8s.Patch(ctx, shrunk, client.MergeFrom(pg))).To(Succeed())
		Eventually(func(g Gomega) {
			_, obs := podGroup(g, cd)
			g.Expect(obs.MinCount).To(Equal(int32(4)))
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
	})

	It("says why the domain is not Ready when the scheduler finds no clique for its gang", func() {
		cd := utiltesting.MakeComputeDomain("blocked", ns).Channel("blocked-channel").NumNodes(4).Obj()
		Expect(k8s.Create(ctx, cd)).To(Succeed())
		var pg client.Object
		Eventually(func(g Gomega) { pg, _ = podGroup(g, cd) }).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
		// What kube-scheduler writes when no placement of the gang fits.
		unschedulable := pg.(*schedulingv1beta1.PodGroup).DeepCopy()
		unschedulable.Status.Conditions = []metav1.Condition{{
			Type: schedulingv1beta1.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse, Reason: schedulingv1beta1.PodGroupReasonUnschedulable,
			Message: "0/4 nodes are available: 4 cannot allocate all claims", LastTransitionTime: metav1.Now(),
		}}
		Expect(k8s.Status().Update(ctx, unschedulable)).To(Succeed())
		Eventually(func(g Gomega) {
			ready := condition(getDomain(g, ctx, cd), v1beta1.ComputeDomainConditionReady)
			g.Expect(ready.Reason).To(Equal(v1beta1.ComputeDomainReasonGangUnschedulable))
			g.Expect(ready.Message).To(ContainSubstring("cannot allocate all claims"))
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
	})

	It("leaves a user's PodGroup of the domain's name alone and says why placement is not guaranteed", func() {
		foreign := workloadapi.Gang{Namespace: ns, Name: "taken", MinCount: 2}.PodGroup()
		Expect(k8s.Create(ctx, foreign)).To(Succeed())
		cd := utiltesting.MakeComputeDomain("taken", ns).Channel("taken-channel").NumNodes(4).Obj()
		Expect(k8s.Create(ctx, cd)).To(Succeed())
		Eventually(func(g Gomega) {
			placement := condition(getDomain(g, ctx, cd), v1beta1.ComputeDomainConditionPlacementGuaranteed)
			g.Expect(placement.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(placement.Reason).To(Equal(v1beta1.ComputeDomainReasonPodGroupConflict))
			g.Expect(placement.Message).To(ContainSubstring("PodGroup " + ns + "/taken exists"))
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
		_, obs := podGroup(Default, cd)
		Expect(obs).To(Equal(workloadapi.Observed{Gang: true, MinCount: 2}), "the user's PodGroup is unchanged")
	})

	It("places a domain larger than one IMEX ensemble as a composite gang of slices, one PodGroup per slice, and shows the slices", func() {
		// Two racks of ten more: each holds one slice (a plan whose slices no clique holds is refused).
		for rack := 1; rack <= 2; rack++ {
			for i := range 10 {
				node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
					Name:   fmt.Sprintf("%s-r%d-n%d", ns, rack, i),
					Labels: map[string]string{v1beta1.CliqueNodeLabelKey: fmt.Sprintf("%s.%d", ns, rack)},
				}}
				Expect(k8s.Create(ctx, node)).To(Succeed())
				DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, node))).To(Succeed()) })
			}
		}
		cd := utiltesting.MakeComputeDomain("huge", ns).Channel("huge-channel").NumNodes(19).Obj()
		Expect(k8s.Create(ctx, cd)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getDomain(g, ctx, cd)
			placement := condition(got, v1beta1.ComputeDomainConditionPlacementGuaranteed)
			g.Expect(placement.Status).To(Equal(metav1.ConditionTrue), "%+v", placement)
			g.Expect(placement.Reason).To(Equal(v1beta1.ComputeDomainReasonSliceGang))
			g.Expect(placement.Message).To(ContainSubstring("spec.numNodes 19 is placed as 2 slices (10+9)"))
			g.Expect(got.Status.Slices).To(Equal([]v1beta1.ComputeDomainSlice{
				{Index: 0, FirstRank: 0, Size: 10, PodGroup: "huge-slice-0"},
				{Index: 1, FirstRank: 10, Size: 9, PodGroup: "huge-slice-1"},
			}))
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
		cpg := workloadapi.NewCompositePodGroup()
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "huge"}, cpg)).To(Succeed())
		Expect(metav1.IsControlledBy(cpg, getDomain(Default, ctx, cd))).To(BeTrue())
		composite, err := workloadapi.ObserveComposite(cpg)
		Expect(err).NotTo(HaveOccurred())
		Expect(composite.Gang).To(BeTrue())
		Expect(composite.MinGroupCount).To(BeEquivalentTo(2))
		for i, size := range []int32{10, 9} {
			pg := workloadapi.NewPodGroup()
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("huge-slice-%d", i)}, pg)).To(Succeed())
			obs, err := workloadapi.Observe(pg)
			Expect(err).NotTo(HaveOccurred())
			Expect(obs.MinCount).To(Equal(size))
			Expect(obs.TopologyKey).To(Equal(computedomain.PlacementTopologyKey))
			Expect(workloadapi.ParentOf(pg)).To(Equal("huge"))
		}
		err = k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "huge"}, workloadapi.NewPodGroup())
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no one-clique PodGroup for a sliced domain: %v", err)
	})

	It("refuses a slice larger than one IMEX ensemble and makes no PodGroup, so no pod of it can bind", func() {
		cd := utiltesting.MakeComputeDomain("wide", ns).Channel("wide-channel").NumNodes(40).Obj()
		cd.Spec.SliceSize = 20
		Expect(k8s.Create(ctx, cd)).To(Succeed())
		Eventually(func(g Gomega) {
			placement := condition(getDomain(g, ctx, cd), v1beta1.ComputeDomainConditionPlacementGuaranteed)
			g.Expect(placement.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(placement.Reason).To(Equal(v1beta1.ComputeDomainReasonExceedsClique))
			g.Expect(placement.Message).To(ContainSubstring("spec.sliceSize 20: larger than a clique's IMEX ensemble (18 nodes)"))
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
		for _, o := range []client.Object{workloadapi.NewPodGroup(), workloadapi.NewCompositePodGroup()} {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "wide"}, o)
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing placed for a refused domain: %v", err)
		}
	})

	It("refuses at the API a slice size that does not divide spec.numNodes, naming the fields", func() {
		cd := utiltesting.MakeComputeDomain("odd", ns).Channel("odd-channel").NumNodes(64).Obj()
		cd.Spec.SliceSize = 12
		err := k8s.Create(ctx, cd)
		Expect(err).To(MatchError(ContainSubstring("spec.sliceSize must divide spec.numNodes")))
	})

	It("makes no PodGroup for a domain without numNodes", func() {
		cd := createDomain(ctx, "elastic", ns)
		Eventually(func(g Gomega) {
			placement := condition(getDomain(g, ctx, cd), v1beta1.ComputeDomainConditionPlacementGuaranteed)
			g.Expect(placement.Reason).To(Equal(v1beta1.ComputeDomainReasonNumNodesUnset))
		}).WithTimeout(reconciled).WithPolling(poll).Should(Succeed())
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "elastic"}, workloadapi.NewPodGroup())
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no PodGroup without a gang size: %v", err)
	})
})
