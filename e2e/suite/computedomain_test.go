package suite

import (
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/nodeagent"
)

var computeDomainsGVR = schema.GroupVersionResource{Group: "resource.nvidia.com", Version: "v1beta1", Resource: "computedomains"}

var _ = Describe("An NVIDIA-style ComputeDomain job of 4 pods", func() {
	It("runs every pod with the domain's one IMEX channel in a Ready domain of 4 nodes, and the daemons leave when the job is done", func(ctx SpecContext) {
		if _, err := env.client.Discovery().ServerResourcesForGroupVersion("resource.nvidia.com/v1beta1"); err != nil {
			Skip("ComputeDomains are not installed in this cluster: " + err.Error())
		}
		dyn, err := dynamic.NewForConfig(env.restConfig)
		Expect(err).NotTo(HaveOccurred())
		ns := newNamespace(ctx)
		createFixture(ctx, ns, "demo/computedomain-job.yaml")

		By("waiting for the domain to be Ready with 4 nodes and the 4 pods to start")
		var pods []corev1.Pod
		Eventually(ctx, func(g Gomega) {
			cd, err := dyn.Resource(computeDomainsGVR).Namespace(ns).Get(ctx, "imex-domain", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			status, _, _ := unstructured.NestedString(cd.Object, "status", "status")
			g.Expect(status).To(Equal("Ready"), func() string { return podsSummary(ctx, ns) })
			nodes, _, _ := unstructured.NestedSlice(cd.Object, "status", "nodes")
			g.Expect(nodes).To(HaveLen(4))
			for _, n := range nodes {
				g.Expect(n).To(HaveKeyWithValue("status", "Ready"))
				g.Expect(n).To(HaveKey("ipAddress"))
				g.Expect(n).To(HaveKey("cliqueID"))
			}
			list, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=nccl-job"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Items).To(HaveLen(4))
			for _, p := range list.Items {
				g.Expect(p.Status.Phase).To(BeElementOf(corev1.PodRunning, corev1.PodSucceeded), "pod %s", p.Name)
			}
			pods = list.Items
		}).WithTimeout(jobTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())

		if simulatedChecks("recorded CDI edits") {
			channels := map[string]bool{}
			for _, p := range pods {
				edits, err := nodeagent.DecodeCDIEdits(p.Annotations)
				Expect(err).NotTo(HaveOccurred())
				var got []string
				for _, n := range edits["ctr"].DeviceNodes {
					if strings.HasPrefix(n.Path, "/dev/nvidia-caps-imex-channels/") {
						got = append(got, filepath.Base(n.Path))
					}
				}
				Expect(got).To(HaveLen(1), "pod %s gets exactly one IMEX channel", p.Name)
				channels[got[0]] = true
			}
			Expect(channels).To(HaveLen(1), "all pods share the domain's channel")
		}

		By("waiting for the job to complete and the daemons to leave")
		Eventually(ctx, func(g Gomega) {
			job, err := env.client.BatchV1().Jobs(ns).Get(ctx, "nccl-job", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(job.Status.Succeeded).To(BeEquivalentTo(4))
			daemons, err := env.client.CoreV1().Pods(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(daemons.Items).To(BeEmpty())
		}).WithTimeout(jobTimeout).Should(Succeed())

		By("deleting the domain: nothing it created remains")
		Expect(dyn.Resource(computeDomainsGVR).Namespace(ns).Delete(ctx, "imex-domain", metav1.DeleteOptions{})).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			_, err := dyn.Resource(computeDomainsGVR).Namespace(ns).Get(ctx, "imex-domain", metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "domain gone, got %v", err)
			dss, err := env.client.AppsV1().DaemonSets(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(dss.Items).To(BeEmpty())
			_, err = env.client.ResourceV1().ResourceClaimTemplates(ns).Get(ctx, "imex-channel", metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "channel claim template gone, got %v", err)
		}).WithTimeout(jobTimeout).Should(Succeed())
	})
})

var _ = Describe("A ComputeDomain whose IMEX daemon crashes on one node", func() {
	It("gets the daemon restarted by the node and is Ready again with both nodes", func(ctx SpecContext) {
		requireSimulated("killing a daemon container")
		if _, err := env.client.Discovery().ServerResourcesForGroupVersion("resource.nvidia.com/v1beta1"); err != nil {
			Skip("ComputeDomains are not installed in this cluster: " + err.Error())
		}
		dyn, err := dynamic.NewForConfig(env.restConfig)
		Expect(err).NotTo(HaveOccurred())
		ns := newNamespace(ctx)
		createFixture(ctx, ns, "demo/computedomain-pods.yaml")
		domainReady := func(g Gomega) {
			cd, err := dyn.Resource(computeDomainsGVR).Namespace(ns).Get(ctx, "imex-pods", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			status, _, _ := unstructured.NestedString(cd.Object, "status", "status")
			g.Expect(status).To(Equal("Ready"), func() string { return podsSummary(ctx, ns) })
			nodes, _, _ := unstructured.NestedSlice(cd.Object, "status", "nodes")
			g.Expect(nodes).To(HaveLen(2))
			for _, n := range nodes {
				g.Expect(n).To(HaveKeyWithValue("status", "Ready"))
			}
		}
		Eventually(ctx, domainReady).WithTimeout(jobTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
		pod := runningPod(ctx, ns, "imex-pod-0")

		By("killing the IMEX daemon container on " + pod.Spec.NodeName)
		var daemon corev1.Pod
		Eventually(ctx, func(g Gomega) {
			daemons, err := env.client.CoreV1().Pods(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{
				FieldSelector: "spec.nodeName=" + pod.Spec.NodeName,
			})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(daemons.Items).To(HaveLen(1))
			g.Expect(daemons.Items[0].Status.Phase).To(Equal(corev1.PodRunning))
			daemon = daemons.Items[0]
		}).WithTimeout(podStartTimeout).Should(Succeed())
		Expect(env.sim.KillContainer(pod.Spec.NodeName, daemon.Namespace, daemon.Name, daemon.Spec.Containers[0].Name)).To(Succeed())

		By("waiting for the restart and the domain's recovery")
		Eventually(ctx, func(g Gomega) {
			p, err := env.client.CoreV1().Pods(daemon.Namespace).Get(ctx, daemon.Name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Status.ContainerStatuses).To(HaveLen(1))
			cs := p.Status.ContainerStatuses[0]
			g.Expect(cs.RestartCount).To(BeEquivalentTo(1))
			g.Expect(cs.LastTerminationState.Terminated).NotTo(BeNil())
			g.Expect(cs.LastTerminationState.Terminated.ExitCode).To(BeEquivalentTo(137))
		}).WithTimeout(podStartTimeout).Should(Succeed())
		Eventually(ctx, domainReady).WithTimeout(jobTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	})
})
