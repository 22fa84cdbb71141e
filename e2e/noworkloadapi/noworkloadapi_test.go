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

package noworkloadapi

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/placement/stories"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/nodeagent"
)

// domainReadyTimeout bounds a small domain's formation.
const domainReadyTimeout = 2 * time.Minute

// pc is the suite's cluster, started by BeforeSuite.
var pc *stories.Cluster

func TestNoWorkloadAPI(t *testing.T) {
	ctrllog.SetLogger(klog.Background())
	RegisterFailHandler(Fail)
	RunSpecs(t, "computedomain-operator e2e without the Workload API")
}

var _ = stories.StartInBeforeSuite(&pc, "the Workload API off", simcluster.Config{DisableWorkloadAPI: true})

// The acceptance stories of the Workload API suite (e2e/placement), here placed by the controller's fallback.
var _ = stories.PlacementStories(&pc, stories.CliqueFallback, stories.UnmodifiedJob)

var _ = Describe("A ComputeDomain job on a cluster without the Workload API", func() {
	It("holds NVIDIA's affinity job until all its pods exist, releases them into one clique, forms its domain, and says how it was placed", func(ctx SpecContext) {
		_, err := pc.Client.Discovery().ServerResourcesForGroupVersion("scheduling.k8s.io/v1beta1")
		Expect(err).To(HaveOccurred(), "the cluster does not serve the Workload API")

		ns, err := pc.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "no-wl-"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		// NVIDIA's manifest: the pods' required pod affinity on the clique label, and the webhook's hold.
		// Its pods run for a minute, so the domain is seen Ready while they run (the suite's pods run 2 s).
		objs := pc.Fixture("demo/computedomain-job.yaml")
		for _, o := range objs {
			if o.GetKind() == "Job" {
				Expect(unstructured.SetNestedStringMap(o.Object, map[string]string{nodeagent.RunDurationAnnotation: "1m"},
					"spec", "template", "metadata", "annotations")).To(Succeed())
			}
		}
		_, err = pc.Applier.Create(ctx, ns.Name, objs)
		Expect(err).NotTo(HaveOccurred())
		var cd cdv1beta1.ComputeDomain
		Eventually(ctx, func(g Gomega) {
			g.Expect(pc.CRClient.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "imex-domain"}, &cd)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(cd.Status.Conditions, cdv1beta1.ComputeDomainConditionReady)).To(BeTrue(), "Ready: %+v", cd.Status.Conditions)
			g.Expect(cd.Status.Cliques).To(HaveLen(1))
			c := meta.FindStatusCondition(cd.Status.Conditions, cdv1beta1.ComputeDomainConditionPlacementGuaranteed)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(cdv1beta1.ComputeDomainReasonCliqueAffinity))
			g.Expect(c.Message).To(ContainSubstring("pinned the domain's 4 pods to NVLink clique %s", cd.Status.Cliques[0].CliqueID))
		}).WithTimeout(domainReadyTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())

		By("every pod was released into the domain's clique, with required node affinity to it")
		pods, err := pc.Client.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{LabelSelector: cdv1beta1.PlacementDomainLabelKey + "=imex-domain"})
		Expect(err).NotTo(HaveOccurred())
		Expect(pods.Items).To(HaveLen(4))
		for _, p := range pods.Items {
			Expect(p.Annotations).To(HaveKeyWithValue(cdv1beta1.PlacementCliqueAnnotationKey, cd.Status.Cliques[0].CliqueID))
			Expect(p.Spec.SchedulingGates).To(BeEmpty())
			Expect(p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions).To(
				ContainElement(corev1.NodeSelectorRequirement{Key: cdv1beta1.CliqueNodeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{cd.Status.Cliques[0].CliqueID}}))
		}

		By("the job ends and frees its trays for the other specs")
		Eventually(ctx, func(g Gomega) {
			claims, err := simcluster.ClaimsHoldingDevices(ctx, pc.Client, ns.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(claims).To(BeEmpty())
		}).WithTimeout(domainReadyTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	})
})

var _ = Describe("The clique placement fallback against a long domain name and a forged placement mark", func() {
	It("places a domain whose name is longer than a label value allows, and refuses a pod that carries the controller's placement mark", func(ctx SpecContext) {
		ns := pc.Namespace(ctx)
		DeferCleanup(func(ctx SpecContext) { pc.DeleteNamespace(ctx, ns) })

		By("a tenant's pod that claims to be released into a clique is refused, naming the annotation")
		forged := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "squatter", Namespace: ns,
			Labels:      map[string]string{cdv1beta1.PlacementDomainLabelKey: "someone-elses-domain"},
			Annotations: map[string]string{cdv1beta1.PlacementCliqueAnnotationKey: pc.RackClique(0)}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		_, err := pc.Client.CoreV1().Pods(ns).Create(ctx, forged, metav1.CreateOptions{})
		Expect(err).To(MatchError(ContainSubstring("only the operator's controller writes the " + cdv1beta1.PlacementCliqueAnnotationKey + " annotation")))

		By("a 2-node domain named with 80 characters: its pods are labeled with a value that fits, held, and released together")
		name := "a-domain-whose-name-is-much-longer-than-the-sixty-three-characters-of-label-value"
		Expect(len(name)).To(BeNumerically(">", 63))
		var objs []*unstructured.Unstructured
		for _, o := range pc.Fixture(stories.UnmodifiedJob) {
			switch o.GetKind() {
			case "ComputeDomain":
				o.SetName(name)
				Expect(unstructured.SetNestedField(o.Object, int64(2), "spec", "numNodes")).To(Succeed())
			case "Job":
				Expect(unstructured.SetNestedField(o.Object, int64(2), "spec", "parallelism")).To(Succeed())
				Expect(unstructured.SetNestedField(o.Object, int64(2), "spec", "completions")).To(Succeed())
			}
			objs = append(objs, o)
		}
		_, err = pc.Applier.Create(ctx, ns, objs)
		Expect(err).NotTo(HaveOccurred())
		var cd cdv1beta1.ComputeDomain
		Eventually(ctx, func(g Gomega) {
			g.Expect(pc.CRClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cd)).To(Succeed())
			c := meta.FindStatusCondition(cd.Status.Conditions, cdv1beta1.ComputeDomainConditionPlacementGuaranteed)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(cdv1beta1.ComputeDomainReasonCliqueAffinity), c.Message)
		}).WithTimeout(domainReadyTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
		pods, err := pc.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: cdv1beta1.PlacementDomainLabelKey + "=" + cdv1beta1.PlacementDomainLabelValue(name)})
		Expect(err).NotTo(HaveOccurred())
		Expect(pods.Items).To(HaveLen(2))
		clique := pods.Items[0].Annotations[cdv1beta1.PlacementCliqueAnnotationKey]
		Expect(clique).NotTo(BeEmpty())
		for _, p := range pods.Items {
			Expect(p.Annotations).To(HaveKeyWithValue(cdv1beta1.PlacementCliqueAnnotationKey, clique), "both pods in one clique")
			Expect(p.Spec.SchedulingGates).To(BeEmpty())
		}
		pc.WaitJobDone(ctx, ns)
	})
})

// Jobs larger than one rack, placed slice by slice by the controller's fallback.
var _ = stories.MultiRackStories(&pc, stories.CliqueFallback)
