package suite

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"
)

var _ = Describe("A ComputeDomain on a node without a multi-node NVLink fabric", func() {
	It("starts the pod with no IMEX channel injected and says so in the domain's status", func(ctx SpecContext) {
		dyn := computeDomains()
		hgx, err := env.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: topology.ProfileLabel + "=hgx-h100-8"})
		Expect(err).NotTo(HaveOccurred())
		if len(hgx.Items) == 0 {
			Skip("no node labeled " + topology.ProfileLabel + "=hgx-h100-8 (the simulated cluster's HGX nodes)")
		}
		ns := newNamespace(ctx)
		createFixture(ctx, ns, "demo/computedomain-no-fabric.yaml")

		By("the pod runs and the domain is Ready, its Ready condition naming the node without a fabric")
		pod := runningPod(ctx, ns, "hgx-pod")
		Eventually(ctx, func(g Gomega) {
			cd, err := dyn.Resource(computeDomainsGVR).Namespace(ns).Get(ctx, "hgx-domain", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			status, _, _ := unstructured.NestedString(cd.Object, "status", "status")
			g.Expect(status).To(Equal("Ready"), func() string { return podsSummary(ctx, ns) })
			ready, err := conditionOf(cd, cdv1beta1.ComputeDomainConditionReady)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(ready.Reason).To(Equal(cdv1beta1.ComputeDomainReasonNoFabric))
			g.Expect(ready.Message).To(ContainSubstring(pod.Spec.NodeName))
			nodes, _, _ := unstructured.NestedSlice(cd.Object, "status", "nodes")
			g.Expect(nodes).To(ConsistOf(And(HaveKeyWithValue("name", pod.Spec.NodeName), HaveKeyWithValue("cliqueID", ""))))
		}).WithTimeout(jobTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
		Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))

		if simulatedChecks("recorded CDI edits") {
			Expect(imexChannels(pod, "ctr")).To(BeEmpty(), "a node without a fabric has no IMEX channel to give")
		}
	})
})
