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
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/topologyview"
)

// The views of kubectl computedomain (internal/topologyview) read the live cluster through the API alone, as
// the plugin does.
var _ = Describe("kubectl computedomain on a live cluster", func() {
	It("draws a serving domain's two trays in its rack with their GPUs, every other node once, and describes the domain Ready on its channel", func(ctx SpecContext) {
		cl := computeDomains()
		ns := newNamespace(ctx)
		createFixture(ctx, ns, "demo/computedomain-deployment.yaml")
		key := client.ObjectKey{Namespace: ns, Name: "serving"}

		By("waiting for the domain to be Ready on 2 trays of one rack with a channel, and its 2 replicas to run")
		var cd cdv1beta1.ComputeDomain
		Eventually(ctx, func(g Gomega) {
			g.Expect(cl.Get(ctx, key, &cd)).To(Succeed())
			g.Expect(cd.Status.Status).To(Equal(cdv1beta1.ComputeDomainStatusReady))
			g.Expect(cd.Status.Nodes).To(HaveLen(2))
			g.Expect(cd.Status.Cliques).To(HaveLen(1))
			g.Expect(cd.Status.Cliques[0].Channel).NotTo(BeNil())
			pods, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=serving"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods.Items).To(HaveLen(2))
			for _, p := range pods.Items {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
			}
		}).WithTimeout(jobTimeout).WithPolling(100*time.Millisecond).Should(Succeed(), func() string { return podsSummary(ctx, ns) })
		clique := cd.Status.Cliques[0].CliqueID
		domainNodes := map[string]bool{}
		for _, n := range cd.Status.Nodes {
			domainNodes[n.Name] = true
		}

		By("racks --domain: the domain's rack alone, the domain holding exactly its 2 trays, one GPU each, their IMEX daemons ready")
		Eventually(ctx, func(g Gomega) {
			snap, err := topologyview.Fetch(ctx, cl, topologyview.FetchOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			racks, err := topologyview.BuildRacks(snap, topologyview.RacksOptions{Domain: "serving", DomainNamespace: ns})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(racks.Cliques).To(HaveLen(1))
			g.Expect(racks.Cliques[0].ID).To(Equal(clique))
			held := map[string]bool{}
			for _, t := range racks.Cliques[0].Trays {
				for _, h := range t.Holders {
					if h.Kind == topologyview.HolderComputeDomain && h.Namespace == ns && h.Name == "serving" {
						held[t.Node] = true
						g.Expect(h.GPUs).To(Equal(1), "tray %s: the replica's one GPU", t.Node)
						g.Expect(t.IMEX).To(Equal(topologyview.IMEXReady), "tray %s", t.Node)
						g.Expect(t.Free).To(BeFalse(), "tray %s", t.Node)
					}
				}
			}
			g.Expect(held).To(Equal(domainNodes), "the trays the view says the domain holds are its status's nodes")
		}).WithTimeout(podStartTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())

		By("racks: every node drawn once, in the row of its clique label, and the free trays counted")
		snap, err := topologyview.Fetch(ctx, cl, topologyview.FetchOptions{EventsNamespace: ns})
		Expect(err).NotTo(HaveOccurred())
		racks, err := topologyview.BuildRacks(snap, topologyview.RacksOptions{})
		Expect(err).NotTo(HaveOccurred())
		rowOf := map[string]string{}
		free := 0
		for _, c := range racks.Cliques {
			for _, t := range c.Trays {
				Expect(rowOf).NotTo(HaveKey(t.Node), "tray %s drawn twice", t.Node)
				rowOf[t.Node] = c.ID
				if t.Free {
					free++
				}
			}
		}
		Expect(racks.FreeTrays).To(Equal(free))
		Expect(racks.TotalTrays).To(Equal(len(snap.Nodes)))
		for _, n := range snap.Nodes {
			Expect(rowOf[n.Name]).To(Equal(n.Labels[cdv1beta1.CliqueNodeLabelKey]), "node %s", n.Name)
		}
		var text, svg bytes.Buffer
		Expect(topologyview.WriteRacks(&text, racks, topologyview.FormatText)).To(Succeed())
		Expect(text.String()).To(MatchRegexp(`(?m)^[A-Z]+ +ComputeDomain +%s/serving +2$`, ns))
		AddReportEntry("kubectl computedomain racks", text.String())
		Expect(topologyview.WriteRacks(&svg, racks, topologyview.FormatSVG)).To(Succeed())
		var doc struct{ XMLName xml.Name }
		Expect(xml.Unmarshal(svg.Bytes(), &doc)).To(Succeed())
		Expect(doc.XMLName.Local).To(Equal("svg"))
		Expect(strings.Count(svg.String(), `class="tray"`)).To(Equal(len(snap.Nodes)), "one tray per node in the picture")

		By("describe: Ready, nothing blocks it, its clique's channel, its nodes and its 2 running pods")
		d, err := topologyview.Describe(snap, ns, "serving")
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Blocker).To(HavePrefix("Nothing blocks it"))
		Expect(d.Cliques).To(HaveLen(1))
		Expect(d.Cliques[0].ID).To(Equal(clique))
		Expect(d.Cliques[0].Channel).To(Equal(cd.Status.Cliques[0].Channel))
		Expect(d.Cliques[0].Nodes).To(HaveLen(2))
		Expect(d.Pods).To(HaveLen(2))
		for _, p := range d.Pods {
			Expect(domainNodes).To(HaveKey(p.Node), "pod %s", p.Name)
			Expect(p.Clique).To(Equal(clique), "pod %s", p.Name)
			Expect(p.Phase).To(Equal("Running"), "pod %s", p.Name)
		}
	})

	It("says in one sentence what keeps a domain without a workload from Ready, from its own conditions", func(ctx SpecContext) {
		cl := computeDomains()
		ns := newNamespace(ctx)
		cd := &cdv1beta1.ComputeDomain{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "waiting"},
			Spec: cdv1beta1.ComputeDomainSpec{NumNodes: 4, Channel: cdv1beta1.ComputeDomainChannelSpec{
				ResourceClaimTemplate: cdv1beta1.ComputeDomainResourceClaimTemplate{Name: "waiting-channel"},
			}},
		}
		Expect(cl.Create(ctx, cd)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(cd), cd)).To(Succeed())
			ready := meta.FindStatusCondition(cd.Status.Conditions, cdv1beta1.ComputeDomainConditionReady)
			g.Expect(ready).NotTo(BeNil(), "the controller wrote a Ready condition")
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))

			snap, err := topologyview.Fetch(ctx, cl, topologyview.FetchOptions{EventsNamespace: ns})
			g.Expect(err).NotTo(HaveOccurred())
			d, err := topologyview.Describe(snap, ns, "waiting")
			g.Expect(err).NotTo(HaveOccurred())
			// The sentence names a False condition of the domain, its reason and its message.
			var named []string
			for _, c := range d.Conditions {
				if c.Status == string(metav1.ConditionFalse) && (c.Type == cdv1beta1.ComputeDomainConditionReady || c.Type == cdv1beta1.ComputeDomainConditionPlacementGuaranteed) {
					named = append(named, fmt.Sprintf("(%s %s): %s", c.Type, c.Reason, strings.TrimRight(c.Message, ".")))
				}
			}
			g.Expect(d.Blocker).To(HavePrefix("Blocked"))
			g.Expect(named).To(ContainElement(Satisfy(func(s string) bool { return strings.Contains(d.Blocker, s) })),
				"the blocker %q names one of %v", d.Blocker, named)
			g.Expect(d.Pods).To(BeEmpty())
		}).WithTimeout(podStartTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())

		By("racks --domain of it shows no clique: it holds no tray")
		snap, err := topologyview.Fetch(ctx, cl, topologyview.FetchOptions{})
		Expect(err).NotTo(HaveOccurred())
		racks, err := topologyview.BuildRacks(snap, topologyview.RacksOptions{Domain: "waiting", DomainNamespace: ns})
		Expect(err).NotTo(HaveOccurred())
		Expect(racks.Cliques).To(BeEmpty())
	})
})
