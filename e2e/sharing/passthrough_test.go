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
	"fmt"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/nodeagent"
	"github.com/computedomain-operator/computedomain-operator/internal/fabricmanager"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
)

// passthroughGoneTimeout covers the kubelet's unprepare after the pod is gone and the plugin's republish.
const passthroughGoneTimeout = time.Minute

// publishedGPUDevices lists the GPU plugin's published devices by name.
func publishedGPUDevices(ctx context.Context, g Gomega) map[string]resourceapi.Device {
	slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + cdv1beta1.GPUDriverName})
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]resourceapi.Device{}
	for _, s := range slices.Items {
		for _, d := range s.Spec.Devices {
			out[d.Name] = d
		}
	}
	return out
}

func stringAttr(d resourceapi.Device, name resourceapi.QualifiedName) string {
	if a, ok := d.Attributes[name]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}

func intAttr(d resourceapi.Device, name resourceapi.QualifiedName) (int64, bool) {
	if a, ok := d.Attributes[name]; ok && a.IntValue != nil {
		return *a.IntValue, true
	}
	return 0, false
}

// gpuOnBus is the name of the published gpu-type device of a PCI bus ID, "" if none.
func gpuOnBus(devices map[string]resourceapi.Device, busID string) string {
	for name, d := range devices {
		if stringAttr(d, "type") == "gpu" && stringAttr(d, "resource.kubernetes.io/pciBusID") == busID {
			return name
		}
	}
	return ""
}

// nodeRoot is the simulated HGX node's host root.
func nodeRoot() (string, hostroot.Root) {
	node := sim.Nodes()[0].Name
	paths, err := sim.NodePaths(node)
	Expect(err).NotTo(HaveOccurred())
	return node, hostroot.New(paths.Root)
}

// passedThrough is one GPU of a running VM pod: its vfio device, bus ID and IOMMU group.
type passedThrough struct {
	device, busID string
	group         int
}

// runningVM waits for the pod to run and returns its claim's vfio devices, checking that each GPU is on vfio-pci in
// the node's sysfs and that the pod's CDI edits carry its group's node (and wantAPIDevice: /dev/vfio/vfio).
func runningVM(ctx context.Context, ns, pod string, n int, wantAPIDevice bool) ([]passedThrough, *resourceapi.ResourceClaim) {
	var p *corev1.Pod
	Eventually(ctx, func(g Gomega) {
		var err error
		p, err = client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
	}).WithTimeout(podStartTimeout).WithPolling(200*time.Millisecond).Should(Succeed(), func() string { return simcluster.PodsSummary(ctx, client, ns) })
	Expect(p.Status.ResourceClaimStatuses).To(HaveLen(1))
	claim, err := client.ResourceV1().ResourceClaims(ns).Get(ctx, *p.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(claim.Status.Allocation).NotTo(BeNil())
	Expect(claim.Status.Allocation.Devices.Results).To(HaveLen(n))
	devices := publishedGPUDevices(ctx, Default)
	_, root := nodeRoot()
	edits, err := nodeagent.DecodeCDIEdits(p.Annotations)
	Expect(err).NotTo(HaveOccurred())
	Expect(edits).To(HaveKey("ctr"))
	var out []passedThrough
	for _, r := range claim.Status.Allocation.Devices.Results {
		Expect(r.Device).To(HavePrefix("gpu-vfio-"))
		bus := stringAttr(devices[r.Device], "resource.kubernetes.io/pciBusID")
		Expect(bus).NotTo(BeEmpty(), "%s is published with its PCI bus ID", r.Device)
		drv, err := root.PCIDriver(bus)
		Expect(err).NotTo(HaveOccurred())
		Expect(drv).To(Equal(hostroot.VFIOPCIDriver), "the node's sysfs shows %s (%s) bound to vfio-pci", bus, r.Device)
		group, err := root.PCIIOMMUGroup(bus)
		Expect(err).NotTo(HaveOccurred())
		Expect(edits["ctr"].DeviceNodes).To(ContainElement(HaveField("Path", fmt.Sprintf("/dev/vfio/%d", group))), "the pod gets %s's IOMMU group", r.Device)
		Expect(gpuOnBus(devices, bus)).To(BeEmpty(), "GPU %s is not published as a GPU while a VM has it", bus)
		out = append(out, passedThrough{device: r.Device, busID: bus, group: group})
	}
	if wantAPIDevice {
		Expect(edits["ctr"].DeviceNodes).To(ContainElement(HaveField("Path", "/dev/vfio/vfio")))
	}
	for _, n := range edits["ctr"].DeviceNodes {
		Expect(n.Path).To(HavePrefix("/dev/vfio/"), "a VM's pod gets VFIO nodes only, no NVIDIA device nodes")
	}
	return out, claim
}

// expectBackOnNvidia waits until every GPU is on the nvidia driver again without override, its /dev/vfio group
// node is gone, and the plugin publishes it as a GPU again.
func expectBackOnNvidia(ctx context.Context, gpus []passedThrough) {
	_, root := nodeRoot()
	Eventually(ctx, func(g Gomega) {
		devices := publishedGPUDevices(ctx, g)
		for _, gpu := range gpus {
			drv, err := root.PCIDriver(gpu.busID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(drv).To(Equal(hostroot.NvidiaPCIDriver), "GPU %s is back on the nvidia driver", gpu.busID)
			override, err := root.ReadSysfs(hostroot.PCIDevicePath(gpu.busID) + "/driver_override")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(override).To(Equal("(null)"))
			_, err = os.Stat(root.Path(fmt.Sprintf("/dev/vfio/%d", gpu.group)))
			g.Expect(os.IsNotExist(err)).To(BeTrue(), "/dev/vfio/%d is gone", gpu.group)
			g.Expect(gpuOnBus(devices, gpu.busID)).NotTo(BeEmpty(), "GPU %s is published as a GPU again", gpu.busID)
		}
	}).WithTimeout(passthroughGoneTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
}

func activePartitions() []int {
	_, root := nodeRoot()
	active, err := fabricmanager.ReadMockActive(root.Path(mock.FabricManagerStateFile))
	Expect(err).NotTo(HaveOccurred())
	return active
}

var _ = Describe("NVIDIA's passthrough shapes on one HGX H100 node: VFIO and Fabric Manager partitions", Ordered, func() {
	BeforeAll(func(ctx SpecContext) {
		By("turning on PassthroughSupport and FabricManagerPartitioning (consumable shares off: a VM holds its GPU whole)")
		Expect(sim.UpgradeOperator(ctx, map[string]any{
			"consumableShares": "disabled",
			"featureGates":     map[string]any{"ConsumableShares": false, "PassthroughSupport": true, "FabricManagerPartitioning": true},
		})).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			// The consumable-shares stories start in unlimited mode, without passthrough.
			Expect(sim.UpgradeOperator(ctx, map[string]any{
				"consumableShares": "unlimited",
				"featureGates":     map[string]any{"ConsumableShares": true, "PassthroughSupport": false, "FabricManagerPartitioning": false},
			})).To(Succeed())
			waitForMode(ctx, "unlimited")
			Eventually(ctx, func(g Gomega) {
				for name := range publishedGPUDevices(ctx, g) {
					g.Expect(name).NotTo(HavePrefix("gpu-vfio-"))
				}
			}).WithTimeout(modeSwitchTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
		}, NodeTimeout(2*modeSwitchTimeout+30*time.Second))
		Eventually(ctx, func(g Gomega) {
			_, err := client.ResourceV1().DeviceClasses().Get(ctx, "vfio.gpu.nvidia.com", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred(), "the chart installs the vfio.gpu.nvidia.com DeviceClass")
			devices := publishedGPUDevices(ctx, g)
			g.Expect(devices).To(HaveKey("gpu-vfio-0"))
			_, ok := intAttr(devices["gpu-vfio-0"], "partition2")
			g.Expect(ok).To(BeTrue(), "gpu-vfio-0 carries its Fabric Manager partition2")
			g.Expect(devices["gpu-0"].AllowMultipleAllocations == nil || !*devices["gpu-0"].AllowMultipleAllocations).To(BeTrue(), "gpu-0 is one claim's")
		}).WithTimeout(modeSwitchTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	})

	It("VFIO quickstart: the pod gets its GPU's /dev/vfio group, the GPU is on vfio-pci while it runs and back on nvidia, published as a GPU, after", func(ctx SpecContext) {
		ns := namespace(ctx)
		create(ctx, ns, "demo/passthrough/gpu-test-vfiopci.yaml")
		gpus, claim := runningVM(ctx, ns, "pod1", 1, false)
		node, _ := nodeRoot()
		traces, err := sim.ClaimTraces(node, string(claim.UID))
		Expect(err).NotTo(HaveOccurred())
		Expect(traces).NotTo(BeEmpty(), "the claim is prepared on the node")
		By(fmt.Sprintf("deleting the pod: %s goes back to the nvidia driver", gpus[0].busID))
		deleteNamespace(ctx, ns)
		expectBackOnNvidia(ctx, gpus)
	})

	It("Fabric Manager partition: two GPUs of one 2-GPU partition for a VM, the partition active while the pod runs and inactive after", func(ctx SpecContext) {
		Expect(activePartitions()).To(BeEmpty(), "no partition is active before the claim")
		ns := namespace(ctx)
		create(ctx, ns, "demo/passthrough/fabric-manager-partition.yaml")
		gpus, _ := runningVM(ctx, ns, "fm-partition-pod", 2, true)
		devices := publishedGPUDevices(ctx, Default)
		p0, ok0 := intAttr(devices[gpus[0].device], "partition2")
		p1, ok1 := intAttr(devices[gpus[1].device], "partition2")
		Expect(ok0 && ok1 && p0 == p1).To(BeTrue(), "both GPUs are in one 2-GPU partition: %d and %d", p0, p1)
		Expect(activePartitions()).To(Equal([]int{int(p0)}), "the mock Fabric Manager shows partition %d active", p0)
		By(fmt.Sprintf("deleting the pod: partition %d goes inactive and %s and %s go back to nvidia", p0, gpus[0].busID, gpus[1].busID))
		deleteNamespace(ctx, ns)
		expectBackOnNvidia(ctx, gpus)
		Eventually(ctx, activePartitions).WithTimeout(passthroughGoneTimeout).Should(BeEmpty())
	})
})
