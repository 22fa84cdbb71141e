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

package suite

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
)

// upgradeRolloutTimeout covers a rolling update of the plugin DaemonSet, one node at a time.
const upgradeRolloutTimeout = 3 * time.Minute

// operatorPods are the chart's plugin and controller pods (not its long-lived IMEX daemons, which a rollout never
// restarts) by UID, with their images.
func operatorPods(ctx SpecContext, g Gomega) map[types.UID]corev1.Pod {
	pods, err := env.client.CoreV1().Pods(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/instance=" + simcluster.ReleaseName + ",app.kubernetes.io/name!=" + simcluster.DaemonComponent,
	})
	g.Expect(err).NotTo(HaveOccurred())
	out := map[types.UID]corev1.Pod{}
	for _, p := range pods.Items {
		out[p.UID] = p
	}
	return out
}

// fileStamp is what changes when a file is rewritten.
type fileStamp struct {
	size    int64
	modTime time.Time
}

func stampCDIFiles(node string, claims sets.Set[string]) map[string]fileStamp {
	paths, err := env.sim.NodePaths(node)
	Expect(err).NotTo(HaveOccurred())
	files, err := cdiFilesOf(node, claims)
	Expect(err).NotTo(HaveOccurred())
	Expect(files).NotTo(BeEmpty(), "node %s has CDI specs of the claims", node)
	out := map[string]fileStamp{}
	for _, f := range files {
		info, err := os.Stat(filepath.Join(paths.CDI, f))
		Expect(err).NotTo(HaveOccurred())
		out[node+"/"+f] = fileStamp{size: info.Size(), modTime: info.ModTime()}
	}
	return out
}

var _ = Describe("helm upgrade of the operator to a new image", func() {
	It("replaces every plugin and controller pod, leaves running claims prepared as they were and the long-lived IMEX daemons running untouched, and the new plugins prepare new claims", func(ctx SpecContext) {
		requireSimulated("helm upgrade of the simulated cluster's install")
		ns := newNamespace(ctx)

		By("running a ComputeDomain of two pods (GPUs and the domain's channel), its domain Ready")
		createFixture(ctx, ns, "demo/computedomain-pods.yaml")
		waitForReadyDomainOfNodes(ctx, ns, "imex-pods", 2)
		pods := []*corev1.Pod{runningPod(ctx, ns, "imex-pod-0"), runningPod(ctx, ns, "imex-pod-1")}
		before := map[string]fileStamp{}
		for _, p := range pods {
			for k, v := range stampCDIFiles(p.Spec.NodeName, sets.New(podClaimUIDs(ctx, p)...)) {
				before[k] = v
			}
		}
		var served map[string]corev1.Pod
		Eventually(ctx, func(g Gomega) { served = expectServedByCliqueDaemons(ctx, g, ns, "imex-pods") }).WithTimeout(podStartTimeout).Should(Succeed())
		Expect(served).To(HaveLen(2), "a long-lived IMEX daemon on each of the domain's nodes")
		var daemons map[types.UID]string
		var restarts map[string]int32
		Eventually(ctx, func(g Gomega) { daemons, restarts = imexDaemonPods(ctx, g), daemonRestarts(ctx, g) }).Should(Succeed())
		var old map[types.UID]corev1.Pod
		Eventually(ctx, func(g Gomega) { old = operatorPods(ctx, g) }).Should(Succeed())

		By("helm upgrade --reuse-values --set image.tag=v2")
		Expect(env.sim.UpgradeOperator(ctx, map[string]any{"image": map[string]any{"tag": "v2"}})).To(Succeed())

		By("waiting until every plugin and controller pod is a new one running the new image")
		Eventually(ctx, func(g Gomega) {
			now := operatorPods(ctx, g)
			g.Expect(now).To(HaveLen(len(old)), "as many operator pods as before")
			for uid, p := range now {
				g.Expect(old).NotTo(HaveKey(uid), "pod %s was replaced", p.Name)
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
				for _, c := range p.Spec.Containers {
					g.Expect(c.Image).To(Equal(simcluster.OperatorImageRepository+":v2"), "pod %s container %s", p.Name, c.Name)
				}
			}
		}).WithTimeout(upgradeRolloutTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())

		By("checking that the running claims were neither unprepared nor prepared again: same CDI specs, untouched")
		after := map[string]fileStamp{}
		for _, p := range pods {
			for k, v := range stampCDIFiles(p.Spec.NodeName, sets.New(podClaimUIDs(ctx, p)...)) {
				after[k] = v
			}
		}
		Expect(after).To(Equal(before))
		for _, p := range pods {
			Expect(runningPod(ctx, ns, p.Name).UID).To(Equal(p.UID), "pod %s kept running", p.Name)
		}

		By("checking that the long-lived IMEX daemons were neither replaced nor restarted and still serve the domain")
		Consistently(ctx, func(g Gomega) {
			g.Expect(imexDaemonPods(ctx, g)).To(Equal(daemons), "the IMEX daemon pods are those from before the upgrade")
			g.Expect(daemonRestarts(ctx, g)).To(Equal(restarts), "no IMEX daemon container restarted")
			for node, d := range cliqueDaemons(ctx, g) {
				g.Expect(d.Status.Phase).To(Equal(corev1.PodRunning), "IMEX daemon %s on %s", d.Name, node)
			}
			g.Expect(expectServedByCliqueDaemons(ctx, g, ns, "imex-pods")).To(HaveLen(2))
		}).WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		waitForReadyDomainOfNodes(ctx, ns, "imex-pods", 2)

		By("preparing a new GPU claim with the new plugins")
		createFixture(ctx, ns, "demo/gpu-claim.yaml")
		runningPod(ctx, ns, "gpu-pod")
	})
})

// waitForReadyDomainOfNodes waits until the domain is Ready with n Ready nodes and returns its UID.
func waitForReadyDomainOfNodes(ctx SpecContext, ns, name string, n int) types.UID {
	return waitForReadyDomainOfNodesWithin(ctx, ns, name, n, jobTimeout)
}

// waitForReadyDomainOfNodesWithin is waitForReadyDomainOfNodes with its own timeout.
func waitForReadyDomainOfNodesWithin(ctx SpecContext, ns, name string, n int, timeout time.Duration) types.UID {
	var uid types.UID
	Eventually(ctx, func(g Gomega) {
		var cd cdv1beta1.ComputeDomain
		g.Expect(computeDomains().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cd)).To(Succeed())
		g.Expect(cd.Status.Status).To(Equal(cdv1beta1.ComputeDomainStatusReady), func() string {
			conditions := make([]string, 0, len(cd.Status.Conditions))
			for _, c := range cd.Status.Conditions {
				conditions = append(conditions, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
			}
			return "domain conditions: " + strings.Join(conditions, "; ")
		})
		g.Expect(cd.Status.Nodes).To(HaveLen(n))
		for _, node := range cd.Status.Nodes {
			g.Expect(node.Status).To(Equal(cdv1beta1.ComputeDomainStatusReady), "node %s", node.Name)
		}
		uid = cd.UID
	}).WithTimeout(timeout).WithPolling(100*time.Millisecond).Should(Succeed(), func() string { return podsSummary(ctx, ns) })
	return uid
}

var _ = Describe("The kubelet plugins of the chart's DaemonSet", func() {
	It("run with their pod's node-bound service account token, which may change its own node's ResourceSlices but not another node's", func(ctx SpecContext) {
		requireSimulated("reading a plugin pod's projected token on its node")
		var plugins []corev1.Pod
		Eventually(ctx, func(g Gomega) {
			list, err := env.client.CoreV1().Pods(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{
				LabelSelector: "app.kubernetes.io/name=compute-domain-kubelet-plugin",
			})
			g.Expect(err).NotTo(HaveOccurred())
			plugins = nil
			for _, p := range list.Items {
				if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
					plugins = append(plugins, p)
				}
			}
			g.Expect(len(plugins)).To(BeNumerically(">=", 2))
		}).WithTimeout(podStartTimeout).Should(Succeed())
		a, b := plugins[0], plugins[1]

		By("reading node " + a.Spec.NodeName + "'s plugin token from the pod's projected volume on that node")
		paths, err := env.sim.NodePaths(a.Spec.NodeName)
		Expect(err).NotTo(HaveOccurred())
		token, err := os.ReadFile(filepath.Join(paths.Root, "var/lib/kubelet/pods", string(a.UID), "volumes/kubernetes.io~projected/kube-api-access/token"))
		Expect(err).NotTo(HaveOccurred())
		cfg := rest.AnonymousClientConfig(env.restConfig)
		cfg.BearerToken = string(token)
		asPluginA, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())

		sliceOf := func(node string) *resourcev1.ResourceSlice {
			slices, err := env.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
			Expect(err).NotTo(HaveOccurred())
			Expect(slices.Items).NotTo(BeEmpty(), "node %s publishes slices", node)
			return &slices.Items[0]
		}
		label := func(s *resourcev1.ResourceSlice) *resourcev1.ResourceSlice {
			s = s.DeepCopy()
			if s.Labels == nil {
				s.Labels = map[string]string{}
			}
			s.Labels["e2e.computedomain-operator.io/touched"] = "true"
			return s
		}
		By("updating node " + b.Spec.NodeName + "'s slice as node " + a.Spec.NodeName + "'s plugin: denied by the node-scoped policy")
		_, err = asPluginA.ResourceV1().ResourceSlices().Update(ctx, label(sliceOf(b.Spec.NodeName)), metav1.UpdateOptions{})
		Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "want a denial, got %v", err)
		Expect(err.Error()).To(ContainSubstring("ValidatingAdmissionPolicy"), "denied by the policy, not by RBAC")
		By("updating its own node's slice: allowed")
		_, err = asPluginA.ResourceV1().ResourceSlices().Update(ctx, label(sliceOf(a.Spec.NodeName)), metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
	})
})
