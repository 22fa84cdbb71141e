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
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var _ = Describe("The GPU cluster", func() {
	It("has the GPU DeviceClasses and a ResourceSlice for every GPU node", func(ctx SpecContext) {
		for _, class := range []string{"gpu.nvidia.com", "mig.nvidia.com"} {
			_, err := env.client.ResourceV1().DeviceClasses().Get(ctx, class, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred(), "DeviceClass %s", class)
		}
		slices, err := env.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		withDevices := map[string]bool{}
		for _, s := range slices.Items {
			if s.Spec.Driver == "gpu.nvidia.com" && s.Spec.NodeName != nil && len(s.Spec.Devices) > 0 {
				withDevices[*s.Spec.NodeName] = true
			}
		}
		Expect(withDevices).NotTo(BeEmpty())

		if !simulatedChecks("the simulated topology") {
			return
		}
		for _, n := range env.sim.Nodes() {
			node, err := env.client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue // the node a spec lost and removed
			}
			Expect(err).NotTo(HaveOccurred())
			Expect(withDevices).To(HaveKey(n.Name))
			Expect(node.Labels[topology.CliqueLabel]).To(Equal(n.CliqueID), "node %s clique label", n.Name)
		}
	})
})

var _ = Describe("A node whose agent stops", Serial, func() {
	It("becomes NotReady and tainted unreachable through the node lifecycle controller, its containers running on; removed from the cluster, nothing it ran answers any more", func(ctx SpecContext) {
		requireSimulated("stopping a node agent")
		// A GB200 rack node that is still there (the node-loss spec removes the node it loses): the H100 and
		// A100 nodes serve other specs.
		var victim string
		for _, n := range env.sim.Nodes() {
			if _, err := env.client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{}); n.Rack >= 0 && err == nil {
				victim = n.Name
			}
		}
		Expect(victim).NotTo(BeEmpty())
		By("cordoning " + victim + " so that no other spec lands on it")
		_, err := env.client.CoreV1().Nodes().Patch(ctx, victim, types.MergePatchType,
			[]byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		node, err := env.client.CoreV1().Nodes().Get(ctx, victim, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(readyStatus(node)).To(Equal(corev1.ConditionTrue))

		By("stopping the node agent of " + victim)
		Expect(env.sim.StopNodeAgent(victim)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { removeLostNode(ctx, victim) })

		Eventually(ctx, func(g Gomega) {
			node, err := env.client.CoreV1().Nodes().Get(ctx, victim, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(readyStatus(node)).To(Equal(corev1.ConditionUnknown))
			g.Expect(slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool {
				return t.Key == corev1.TaintNodeUnreachable
			})).To(BeTrue(), "taints %v", node.Spec.Taints)
		}).WithTimeout(nodeNotReadyTimeout).Should(Succeed())

		By("its containers run on without their kubelet, as on a real node: the kubelet plugin's metrics port answers")
		pods, err := env.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + victim})
		Expect(err).NotTo(HaveOccurred())
		listeners := podListeners(pods.Items)
		Expect(listeners).NotTo(BeEmpty(), "the node runs the kubelet plugin, whose containers declare ports")
		Expect(slices.ContainsFunc(listeners, answers)).To(BeTrue(), "a container of %s answers at one of %v", victim, listeners)

		By("removing " + victim + " from the cluster: powered off, its Node deleted, its pods force-deleted")
		removeLostNode(ctx, victim)
		// Left running, the removed pods' processes would be zombies: the API server no longer accepts their
		// service account tokens (their pods are gone) while its kept-alive connection to a webhook among them
		// still reaches it, and every pod the webhook is asked about is denied "Unauthorized".
		for _, l := range listeners {
			Expect(answers(l)).To(BeFalse(), "%s still answers after %s was removed", l, victim)
		}
	})
})

// podListeners are the pod address and container port of every declared TCP port of the pods.
func podListeners(pods []corev1.Pod) []string {
	var addrs []string
	for _, p := range pods {
		if p.Status.PodIP == "" {
			continue
		}
		for _, c := range p.Spec.Containers {
			for _, port := range c.Ports {
				if port.Protocol == "" || port.Protocol == corev1.ProtocolTCP {
					addrs = append(addrs, net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port.ContainerPort))))
				}
			}
		}
	}
	return addrs
}

// answers reports whether something accepts a TCP connection at addr.
func answers(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

func readyStatus(node *corev1.Node) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}
