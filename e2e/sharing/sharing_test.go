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
	"sort"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/nodeagent"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"
)

const (
	clusterStartTimeout = 3 * time.Minute
	// modeSwitchTimeout covers a helm upgrade: the plugin pod replaced and its slice republished.
	modeSwitchTimeout = 2 * time.Minute
	podStartTimeout   = time.Minute
	// unschedulableTimeout is how long a claim beyond every GPU's memory is watched staying unscheduled.
	unschedulableTimeout = 10 * time.Second
)

var (
	sim     *simcluster.Cluster
	client  kubernetes.Interface
	applier *simcluster.Applier
	repo    string
)

func TestSharing(t *testing.T) {
	ctrllog.SetLogger(klog.Background())
	RegisterFailHandler(Fail)
	RunSpecs(t, "computedomain-operator e2e: consumable GPU shares")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	if os.Getenv("E2E_KUBECONFIG") != "" {
		Skip("this suite starts its own simulated cluster (one H100 node, consumable shares on); it does not run against E2E_KUBECONFIG")
	}
	var err error
	repo, err = simcluster.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	By("starting a simulated cluster of one HGX H100 node whose GPU plugin publishes consumable shares (unlimited)")
	startCtx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
	defer cancel()
	sim, err = simcluster.Start(startCtx, simcluster.Config{
		Topology: topology.Topology{Extra: []topology.NodePool{{Profile: "hgx-h100-8", Count: 1}}},
		ChartValues: map[string]any{
			"featureGates":     map[string]any{"ConsumableShares": true},
			"consumableShares": "unlimited",
		},
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(sim.Stop)
	client = sim.Client()
	applier, err = simcluster.NewApplier(sim.RESTConfig())
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(clusterStartTimeout+30*time.Second))

// share is one claim's allocation as the scheduler wrote it.
type share struct {
	pod, claim, device, shareID string
	consumed                    map[resourceapi.QualifiedName]resource.Quantity
}

var _ = Describe("NVIDIA's consumable-shares demos on one H100 node", Ordered, func() {
	It("unlimited: the four replicas' claims are shares of one GPU, each prepared on the node with the GPU's device", func(ctx SpecContext) {
		waitForMode(ctx, "unlimited")
		ns := namespace(ctx)
		create(ctx, ns, "demo/consumable-shares/unlimited-sharing.yaml")
		shares := runningShares(ctx, ns, 4)
		expectOneDevice(shares)
		for _, s := range shares {
			Expect(s.consumed).To(HaveKeyWithValue(resourceapi.QualifiedName("memory"), resource.MustParse("0")), "a claim that asks for no memory consumes none (%s)", s.claim)
		}
		expectPreparedOnTheNode(ctx, ns, shares)
		deleteNamespace(ctx, ns)
	})

	It("integer (4 shares per GPU): four replicas share one GPU, a fifth goes to another", func(ctx SpecContext) {
		Expect(sim.UpgradeOperator(ctx, map[string]any{"consumableShares": "4"})).To(Succeed())
		waitForMode(ctx, "4")
		ns := namespace(ctx)
		create(ctx, ns, "demo/consumable-shares/integer-sharing.yaml")
		shares := runningShares(ctx, ns, 4)
		expectOneDevice(shares)
		for _, s := range shares {
			Expect(s.consumed).To(HaveKeyWithValue(resourceapi.QualifiedName("shares"), resource.MustParse("1")), s.claim)
		}
		By("scaling to five replicas: the fifth claim does not fit the full GPU")
		scale(ctx, ns, "integer-sharing", 5)
		devices := sharesPerDevice(runningShares(ctx, ns, 5))
		Expect(devices).To(HaveKeyWithValue(shares[0].device, 4), "the first GPU holds four shares: %v", devices)
		Expect(devices).To(HaveLen(2), "the fifth share is on another GPU: %v", devices)
		deleteNamespace(ctx, ns)
	})

	It("memory: two 30Gi claims share one 80 GB GPU, and a claim for more memory than a GPU has stays unschedulable with the scheduler's reason", func(ctx SpecContext) {
		Expect(sim.UpgradeOperator(ctx, map[string]any{"consumableShares": "memory"})).To(Succeed())
		waitForMode(ctx, "memory")
		ns := namespace(ctx)
		objs := create(ctx, ns, "demo/consumable-shares/memory-sharing.yaml")
		shares := runningShares(ctx, ns, 2)
		expectOneDevice(shares)
		for _, s := range shares {
			Expect(s.consumed).To(HaveKeyWithValue(resourceapi.QualifiedName("memory"), resource.MustParse("30Gi")), s.claim)
		}
		expectPreparedOnTheNode(ctx, ns, shares)

		By("a third 30Gi replica does not fit next to the two (80 GB is 79.6Gi, less than 90Gi): it gets another GPU")
		scale(ctx, ns, "memory-sharing", 3)
		devices := sharesPerDevice(runningShares(ctx, ns, 3))
		Expect(devices).To(HaveKeyWithValue(shares[0].device, 2), "%v", devices)
		Expect(devices).To(HaveLen(2), "%v", devices)

		By("a pod whose claim asks for 100Gi, more than any GPU has, stays pending and the scheduler says why")
		big := bigMemoryPod(ctx, ns, objs, "100Gi")
		Consistently(ctx, func(g Gomega) {
			p, err := client.CoreV1().Pods(ns).Get(ctx, big, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Spec.NodeName).To(BeEmpty())
		}).WithTimeout(unschedulableTimeout).WithPolling(500 * time.Millisecond).Should(Succeed())
		p, err := client.CoreV1().Pods(ns).Get(ctx, big, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		var cond *corev1.PodCondition
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.PodScheduled {
				cond = &p.Status.Conditions[i]
			}
		}
		Expect(cond).NotTo(BeNil(), "the scheduler tried the pod")
		Expect(cond.Reason).To(Equal(corev1.PodReasonUnschedulable))
		Expect(cond.Message).To(ContainSubstring("cannot allocate all claims"))
		deleteNamespace(ctx, ns)
	})
})

// waitForMode waits until gpu-0 in the node's slice is published as mode says: a share count, memory (the
// default request is all memory), unlimited (default 0) or disabled (one claim per GPU).
func waitForMode(ctx context.Context, mode string) {
	By("waiting for the GPU plugin to publish consumable shares: " + mode)
	Eventually(ctx, func(g Gomega) {
		slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + cdv1beta1.GPUDriverName})
		g.Expect(err).NotTo(HaveOccurred())
		var gpu0 *resourceapi.Device
		for i := range slices.Items {
			for j := range slices.Items[i].Spec.Devices {
				if d := &slices.Items[i].Spec.Devices[j]; d.Name == "gpu-0" {
					gpu0 = d
				}
			}
		}
		g.Expect(gpu0).NotTo(BeNil(), "gpu-0 is published")
		if mode == "disabled" {
			g.Expect(gpu0.AllowMultipleAllocations == nil || !*gpu0.AllowMultipleAllocations).To(BeTrue(), "gpu-0 is one claim's")
			return
		}
		g.Expect(gpu0.AllowMultipleAllocations).To(HaveValue(BeTrue()))
		mem := gpu0.Capacity["memory"]
		g.Expect(mem.RequestPolicy).NotTo(BeNil())
		shares, hasShares := gpu0.Capacity["shares"]
		switch mode {
		case "unlimited":
			g.Expect(hasShares).To(BeFalse())
			g.Expect(mem.RequestPolicy.Default.IsZero()).To(BeTrue())
		case "memory":
			g.Expect(hasShares).To(BeFalse())
			g.Expect(mem.RequestPolicy.Default.Equal(mem.Value)).To(BeTrue(), "a claim gets all memory by default")
		default:
			g.Expect(hasShares).To(BeTrue())
			g.Expect(shares.Value.String()).To(Equal(mode))
		}
	}).WithTimeout(modeSwitchTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
}

func namespace(ctx context.Context) string {
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "share-"}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return ns.Name
}

// deleteNamespace deletes the story's namespace and waits until its claims are gone, so the next story (and its
// mode switch) finds the GPUs free.
func deleteNamespace(ctx context.Context, ns string) {
	Expect(client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})).To(Succeed())
	Eventually(ctx, func(g Gomega) {
		claims, err := client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(claims.Items).To(BeEmpty())
	}).WithTimeout(podStartTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
}

func create(ctx context.Context, ns, fixture string) []*unstructured.Unstructured {
	objs, err := applier.CreateFromFile(ctx, ns, repo+"/"+fixture)
	Expect(err).NotTo(HaveOccurred(), "create %s", fixture)
	return objs
}

func scale(ctx context.Context, ns, deployment string, replicas int32) {
	s, err := client.AppsV1().Deployments(ns).GetScale(ctx, deployment, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	s.Spec.Replicas = replicas
	_, err = client.AppsV1().Deployments(ns).UpdateScale(ctx, deployment, s, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// runningShares waits for n running pods in ns and returns their claims' allocations, sorted by pod name; every
// claim holds one share of one GPU.
func runningShares(ctx context.Context, ns string, n int) []share {
	var out []share
	Eventually(ctx, func(g Gomega) {
		out = nil
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
				continue
			}
			running++
			g.Expect(p.Status.ResourceClaimStatuses).To(HaveLen(1))
			claim, err := client.ResourceV1().ResourceClaims(ns).Get(ctx, *p.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(claim.Status.Allocation).NotTo(BeNil())
			g.Expect(claim.Status.Allocation.Devices.Results).To(HaveLen(1))
			r := claim.Status.Allocation.Devices.Results[0]
			g.Expect(r.ShareID).NotTo(BeNil(), "claim %s holds a share", claim.Name)
			out = append(out, share{pod: p.Name, claim: claim.Name, device: r.Device, shareID: string(*r.ShareID), consumed: r.ConsumedCapacity})
		}
		g.Expect(running).To(Equal(n), "running pods")
	}).WithTimeout(podStartTimeout).WithPolling(200*time.Millisecond).Should(Succeed(), func() string { return simcluster.PodsSummary(ctx, client, ns) })
	sort.Slice(out, func(i, j int) bool { return out[i].pod < out[j].pod })
	return out
}

// sharesPerDevice counts the shares on each device.
func sharesPerDevice(shares []share) map[string]int {
	out := map[string]int{}
	for _, s := range shares {
		out[s.device]++
	}
	return out
}

// expectOneDevice checks that the shares are of one device, each with its own share ID.
func expectOneDevice(shares []share) {
	ids := map[string]bool{}
	for _, s := range shares {
		Expect(s.device).To(Equal(shares[0].device), "claim %s got %s, claim %s got %s", s.claim, s.device, shares[0].claim, shares[0].device)
		Expect(ids).NotTo(HaveKey(s.shareID), "share IDs are unique")
		ids[s.shareID] = true
	}
}

// expectPreparedOnTheNode checks what the plugin did for each share on the node: the container gets the shared
// GPU (its device node and UUID), and the node's checkpoint records each claim.
func expectPreparedOnTheNode(ctx context.Context, ns string, shares []share) {
	for _, s := range shares {
		p, err := client.CoreV1().Pods(ns).Get(ctx, s.pod, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		edits, err := nodeagent.DecodeCDIEdits(p.Annotations)
		Expect(err).NotTo(HaveOccurred())
		Expect(edits).To(HaveKey("ctr"))
		Expect(edits["ctr"].DeviceNodes).To(ContainElement(HaveField("Path", "/dev/nvidia"+s.device[len("gpu-"):])), "pod %s gets the shared GPU's device", s.pod)
		claim, err := client.ResourceV1().ResourceClaims(ns).Get(ctx, s.claim, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		traces, err := sim.ClaimTraces(p.Spec.NodeName, string(claim.UID))
		Expect(err).NotTo(HaveOccurred())
		Expect(traces).NotTo(BeEmpty(), "claim %s is prepared on the node", s.claim)
	}
}

// bigMemoryPod creates a pod whose claim (from the fixture's template, renamed) asks for memory and returns its name.
func bigMemoryPod(ctx context.Context, ns string, fixture []*unstructured.Unstructured, memory string) string {
	var tmpl *unstructured.Unstructured
	for _, o := range fixture {
		if o.GetKind() == "ResourceClaimTemplate" {
			tmpl = o.DeepCopy()
		}
	}
	Expect(tmpl).NotTo(BeNil())
	tmpl.SetName("gpu-too-much-memory")
	tmpl.SetResourceVersion("")
	tmpl.SetUID("")
	reqs, _, _ := unstructured.NestedSlice(tmpl.Object, "spec", "spec", "devices", "requests")
	Expect(unstructured.SetNestedField(reqs[0].(map[string]any), memory, "exactly", "capacity", "requests", "memory")).To(Succeed())
	Expect(unstructured.SetNestedSlice(tmpl.Object, reqs, "spec", "spec", "devices", "requests")).To(Succeed())
	pod := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "too-big"},
		"spec": map[string]any{
			"resourceClaims": []any{map[string]any{"name": "gpu", "resourceClaimTemplateName": tmpl.GetName()}},
			"containers": []any{map[string]any{"name": "ctr", "image": "ubuntu:24.04", "command": []any{"sleep", "infinity"},
				"resources": map[string]any{"claims": []any{map[string]any{"name": "gpu"}}}}},
		},
	}}
	_, err := applier.Create(ctx, ns, []*unstructured.Unstructured{tmpl, pod})
	Expect(err).NotTo(HaveOccurred(), fmt.Sprintf("create a pod asking for %s", memory))
	return "too-big"
}
