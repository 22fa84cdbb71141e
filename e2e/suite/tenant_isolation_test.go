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
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	eventsv1 "k8s.io/api/events/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

// asTenant is a client that the API server's admission sees as user name (an ordinary tenant user, with the
// RBAC of an admin so that only admission decides).
func asTenant(name string) kubernetes.Interface {
	cfg := rest.CopyConfig(env.restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: name, Groups: []string{"system:masters"}}
	c, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	return c
}

// claimSpecOf requests one device of class with our opaque config (nil: none).
func claimSpecOf(class string, config runtime.Object) resourcev1.ResourceClaimSpec {
	spec := resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{{Name: "d", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class}}},
	}}
	if config != nil {
		raw, err := json.Marshal(config)
		Expect(err).NotTo(HaveOccurred())
		spec.Devices.Config = []resourcev1.DeviceClaimConfiguration{{
			Requests: []string{"d"},
			DeviceConfiguration: resourcev1.DeviceConfiguration{Opaque: &resourcev1.OpaqueDeviceConfiguration{
				Driver: cdv1beta1.ComputeDomainDriverName, Parameters: runtime.RawExtension{Raw: raw},
			}},
		}}
	}
	return spec
}

var _ = Describe("Two tenants in two namespaces with ComputeDomains on one node", func() {
	It("each pod sees only its own domain's channel (Single and All), another tenant's channel or daemon device cannot be claimed, and a forged IMEXNode does not join tenant A's clique's ensemble", func(ctx SpecContext) {
		cl := computeDomains()
		nsA, nsB := newNamespace(ctx), newNamespace(ctx)
		createFixture(ctx, nsA, "demo/tenant-a.yaml")
		a := waitForReadyDomain(ctx, cl, nsA, "tenant-a")
		createFixture(ctx, nsB, "demo/tenant-b.yaml")
		b := waitForReadyDomain(ctx, cl, nsB, "tenant-b")
		podA, podB := runningPod(ctx, nsA, "tenant-a-0"), runningPod(ctx, nsB, "tenant-b-0")
		Expect(podB.Spec.NodeName).To(Equal(podA.Spec.NodeName), "tenant B's pod follows tenant A's")
		Expect(b.channel).NotTo(Equal(a.channel))

		if simulatedChecks("recorded CDI edits") {
			By("allocationMode All gives tenant A its domain's channel, not tenant B's on the same node")
			Expect(imexChannels(ctx, podA, "ctr")).To(Equal([]string{fmt.Sprintf("channel%d", a.channel)}))
			Expect(imexChannels(ctx, podB, "ctr")).To(Equal([]string{fmt.Sprintf("channel%d", b.channel)}))
		}

		tenantB := asTenant("tenant-b-user")
		const channelRule = "is handed out through ComputeDomains"
		By("tenant B asking for tenant A's channel with a claim template naming tenant A's domain: refused, naming the rule")
		stealA := &cdv1beta1.ComputeDomainChannelConfig{
			TypeMeta: metav1.TypeMeta{APIVersion: cdv1beta1.GroupVersion.String(), Kind: cdv1beta1.ComputeDomainChannelConfigKind},
			DomainID: string(a.uid), AllocationMode: cdv1beta1.AllocationModeAll,
		}
		_, err := tenantB.ResourceV1().ResourceClaimTemplates(nsB).Create(ctx, &resourcev1.ResourceClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: "steal-a"},
			Spec:       resourcev1.ResourceClaimTemplateSpec{Spec: claimSpecOf("compute-domain-default-channel.nvidia.com", stealA)},
		}, metav1.CreateOptions{})
		Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "want a refusal, got %v", err)
		Expect(err.Error()).To(ContainSubstring(channelRule))
		By("the same as a ResourceClaim: refused, naming the rule")
		_, err = tenantB.ResourceV1().ResourceClaims(nsB).Create(ctx, &resourcev1.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "steal-a"}, Spec: claimSpecOf("compute-domain-default-channel.nvidia.com", stealA),
		}, metav1.CreateOptions{})
		Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "want a refusal, got %v", err)
		Expect(err.Error()).To(ContainSubstring(channelRule))
		By("tenant B claiming a daemon device with tenant A's domain: refused, naming the rule")
		_, err = tenantB.ResourceV1().ResourceClaims(nsB).Create(ctx, &resourcev1.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "daemon-of-a"},
			Spec: claimSpecOf("compute-domain-daemon.nvidia.com", &cdv1beta1.ComputeDomainDaemonConfig{
				TypeMeta: metav1.TypeMeta{APIVersion: cdv1beta1.GroupVersion.String(), Kind: cdv1beta1.ComputeDomainDaemonConfigKind},
				DomainID: string(a.uid),
			}),
		}, metav1.CreateOptions{})
		Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "want a refusal, got %v", err)
		Expect(err.Error()).To(ContainSubstring("is reserved for the operator's IMEX daemons"))

		By("a forged IMEXNode putting a node without an IMEX daemon into tenant A's clique: refused, with a warning event on the record")
		var domainA cdv1beta1.ComputeDomain
		Expect(cl.Get(ctx, client.ObjectKey{Namespace: nsA, Name: "tenant-a"}, &domainA)).To(Succeed())
		cliqueA := domainA.Status.Nodes[0].CliqueID
		// A node of the cluster without a clique runs no long-lived daemon, so no real IMEXNode has its name.
		intruder := "intruder-node"
		nodes, err := env.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "!" + cdv1beta1.CliqueNodeLabelKey})
		Expect(err).NotTo(HaveOccurred())
		if len(nodes.Items) > 0 {
			intruder = nodes.Items[0].Name
		}
		forged := utiltesting.MakeIMEXNode(intruder, simcluster.OperatorNamespace).Clique(cliqueA).IP("127.0.0.66").Ready().Obj()
		Expect(cl.Create(ctx, forged)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = cl.Delete(ctx, forged) })
		Eventually(ctx, func(g Gomega) {
			events, err := env.client.EventsV1().Events(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(refusals(events.Items, forged.Name)).To(ContainElement(ContainSubstring("not owned by a long-lived IMEX daemon pod")))
		}).WithTimeout(podStartTimeout).Should(Succeed())
		Consistently(ctx, func(g Gomega) {
			var clique cdv1beta1.IMEXClique
			g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: simcluster.OperatorNamespace, Name: cdv1beta1.IMEXCliqueName(cliqueA)}, &clique)).To(Succeed())
			g.Expect(clique.Status.Nodes).NotTo(ContainElement(HaveField("Name", intruder)), "the forged node is not in the clique's ensemble")
			g.Expect(clique.Status.Nodes).NotTo(ContainElement(HaveField("IPAddress", forged.Spec.IPAddress)), "the forged address is not in the clique's ensemble")
			var cd cdv1beta1.ComputeDomain
			g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: nsA, Name: "tenant-a"}, &cd)).To(Succeed())
			g.Expect(cd.Status.Nodes).To(HaveLen(1))
			g.Expect(cd.Status.Nodes[0].Name).To(Equal(a.node), "tenant A's domain keeps its one node")
			g.Expect(cd.Status.Status).To(Equal(cdv1beta1.ComputeDomainStatusReady))
		}).WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	})
})

// refusals are the notes of the IMEXNodeRefused events regarding the IMEXNode name.
func refusals(events []eventsv1.Event, name string) []string {
	var notes []string
	for _, e := range events {
		if e.Reason == cdv1beta1.IMEXNodeReasonRefused && e.Regarding.Kind == "IMEXNode" && e.Regarding.Name == name {
			notes = append(notes, strings.TrimSpace(e.Note))
		}
	}
	return notes
}
