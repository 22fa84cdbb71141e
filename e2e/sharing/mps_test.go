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

package sharing

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/nodeagent"
	"github.com/computedomain-operator/computedomain-operator/internal/mps"
	"github.com/computedomain-operator/computedomain-operator/internal/mps/standin"
)

// daemonGoneTimeout covers the kubelet's unprepare after the last pod of the claim is gone.
const daemonGoneTimeout = time.Minute

var _ = Describe("MPS: two pods share a GPU through one MPS claim", func() {
	It("runs one MPS control daemon for the claim on the node while it is prepared, gives both pods its pipe directory, and stops it at unprepare", func(ctx SpecContext) {
		By("switching consumable shares off: MPS is for a claim that holds its GPU whole")
		Expect(sim.UpgradeOperator(ctx, map[string]any{"consumableShares": "disabled"})).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			// The consumable-shares stories start in unlimited mode.
			Expect(sim.UpgradeOperator(ctx, map[string]any{"consumableShares": "unlimited"})).To(Succeed())
			waitForMode(ctx, "unlimited")
		}, NodeTimeout(modeSwitchTimeout+30*time.Second))
		waitForMode(ctx, "disabled")
		ns := namespace(ctx)
		create(ctx, ns, "demo/gpu-mps.yaml")

		By("both pods run on the node with the claim prepared")
		var pods []*corev1.Pod
		Eventually(ctx, func(g Gomega) {
			pods = nil
			for _, name := range []string{"mps-pod-0", "mps-pod-1"} {
				p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", name)
				pods = append(pods, p)
			}
		}).WithTimeout(podStartTimeout).WithPolling(200*time.Millisecond).Should(Succeed(), func() string { return simcluster.PodsSummary(ctx, client, ns) })
		node := pods[0].Spec.NodeName
		Expect(pods[1].Spec.NodeName).To(Equal(node))
		claim, err := client.ResourceV1().ResourceClaims(ns).Get(ctx, "shared-gpu", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(claim.Status.Allocation).NotTo(BeNil())
		Expect(claim.Status.Allocation.Devices.Results).To(HaveLen(1))
		uid := string(claim.UID)

		By("the stand-in MPS control daemon of the claim runs on the node: a real process started with -d and the claim's pipe directory")
		daemons, err := sim.MPSDaemons(node)
		Expect(err).NotTo(HaveOccurred())
		Expect(daemons).To(HaveLen(1), "one daemon on the node: %v", daemons)
		Expect(daemons).To(HaveKey(uid), "the daemon is the claim's")
		d := daemons[uid]
		Expect(d.PID).NotTo(BeZero(), "the daemon's process runs")
		cmdline := procList(d.PID, "cmdline")
		Expect(filepath.Base(cmdline[0])).To(Equal(simcluster.MPSControlStandinName))
		Expect(cmdline[1:]).To(Equal([]string{"-d"}))
		Expect(procList(d.PID, "environ")).To(ContainElement(mps.EnvPipeDirectory + "=" + d.PipeDir()))

		By("the claim's limits reached the daemon through its control commands")
		st, err := standin.ReadState(d.LogDir())
		Expect(err).NotTo(HaveOccurred())
		Expect(st.ActiveThreadPercentage).To(Equal(ptr.To(50)))
		Expect(st.PinnedMemoryLimits).To(HaveLen(1))
		for uuid, limit := range st.PinnedMemoryLimits {
			Expect(st.VisibleDevices).To(Equal(uuid), "the daemon serves the claim's GPU")
			Expect(limit).To(Equal("10240M"))
		}

		By("both pods' containers get the daemon's pipe directory at /tmp/nvidia-mps")
		for _, p := range pods {
			edits, err := nodeagent.DecodeCDIEdits(p.Annotations)
			Expect(err).NotTo(HaveOccurred())
			Expect(edits).To(HaveKey("ctr"))
			Expect(edits["ctr"].Env).To(ContainElements(mps.EnvPipeDirectory+"=/tmp/nvidia-mps", mps.EnvLogDirectory+"=/var/log/nvidia-mps"))
			Expect(edits["ctr"].Mounts).To(ContainElement(And(HaveField("ContainerPath", "/tmp/nvidia-mps"), HaveField("HostPath", d.PipeDir()))),
				"pod %s mounts the daemon's pipe directory", p.Name)
		}

		By("the GPU plugin's container restarts: the daemon ends with the container, and the restarted plugin starts it again in the same directories")
		restarts := pluginRestarts(ctx, node)
		plugin := gpuPluginPod(ctx, node)
		Expect(sim.KillContainer(node, plugin.Namespace, plugin.Name, "gpu-kubelet-plugin")).To(Succeed())
		Eventually(ctx, func() int32 { return pluginRestarts(ctx, node) }).WithTimeout(podStartTimeout).WithPolling(200 * time.Millisecond).
			Should(BeNumerically(">", restarts))
		Eventually(ctx, func(g Gomega) {
			daemons, err := sim.MPSDaemons(node)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(daemons).To(HaveKey(uid))
			g.Expect(daemons[uid].PID).NotTo(BeZero(), "the claim's daemon runs again")
			g.Expect(daemons[uid].PID).NotTo(Equal(d.PID), "a new process: the old one ended with the container")
			g.Expect(daemons[uid].PipeDir()).To(Equal(d.PipeDir()), "the pipe directory the pods mount")
		}).WithTimeout(podStartTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
		Expect(procList(d.PID, "cmdline")).To(BeEmpty(), "the first daemon's process %d is gone", d.PID)
		st, err = standin.ReadState(d.LogDir())
		Expect(err).NotTo(HaveOccurred())
		Expect(st.ActiveThreadPercentage).To(Equal(ptr.To(50)), "the restarted daemon got the claim's limits again")
		daemons, err = sim.MPSDaemons(node)
		Expect(err).NotTo(HaveOccurred())
		d = daemons[uid]

		By("deleting both pods: the kubelet unprepares the claim and the daemon quits, its directories removed")
		for _, p := range pods {
			Expect(client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{})).To(Succeed())
		}
		Eventually(ctx, func(g Gomega) {
			daemons, err := sim.MPSDaemons(node)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(daemons).To(BeEmpty())
		}).WithTimeout(daemonGoneTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
		Expect(procList(d.PID, "cmdline")).To(BeEmpty(), "the daemon's process %d is gone", d.PID)
		_, err = os.Stat(d.Dir)
		Expect(os.IsNotExist(err)).To(BeTrue(), "the daemon's directory %s is removed: %v", d.Dir, err)
		deleteNamespace(ctx, ns)
	})
})

// procList reads a NUL-separated /proc file of a process (cmdline, environ); nil when the process is gone (or
// a zombie, whose cmdline is empty).
func procList(pid int, file string) []string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), file))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// pluginRestarts is the GPU plugin container's restart count on the node.
func pluginRestarts(ctx context.Context, node string) int32 {
	for _, cs := range gpuPluginPod(ctx, node).Status.ContainerStatuses {
		if cs.Name == "gpu-kubelet-plugin" {
			return cs.RestartCount
		}
	}
	return 0
}

// gpuPluginPod is the kubelet plugins' pod on the node.
func gpuPluginPod(ctx context.Context, node string) *corev1.Pod {
	pods, err := client.CoreV1().Pods(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	Expect(err).NotTo(HaveOccurred())
	for i := range pods.Items {
		for _, c := range pods.Items[i].Spec.Containers {
			if c.Name == "gpu-kubelet-plugin" && pods.Items[i].DeletionTimestamp == nil {
				return &pods.Items[i]
			}
		}
	}
	Fail("no GPU kubelet plugin pod on node " + node)
	return nil
}
