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

package kueue

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// migNode is the suite's MIG node (topology names extra nodes <short name>-<i>).
const migNode = "a100-0"

// migStory: team-a's quota has a line per MIG profile class (1 × 3g.20gb, 2 × 1g.5gb) and 5 MIG memory slices
// (demo/kueue/teams.yaml), none of which it may borrow. A pod with a claim template of a per-profile class is
// charged on that profile's line (demo/kueue/mig-claim-job.yaml); a pod asking for nvidia.com/mig-<profile> in
// resources.requests is charged memory slices through the transformations of demo/kueue/controller-config.yaml
// (demo/kueue/mig-request-job.yaml).
func migStory() {
	const slices = "nvidia.com/mig-memory-slices"

	It("charges each profile the memory slices its MIG devices take from the GPU's shared counters in our ResourceSlices", func(ctx SpecContext) {
		want := transformedSlices()
		Expect(want).To(HaveLen(len(migProfiles)), "a transformation for every profile of the suite")
		got := counterSlices(ctx)
		for _, p := range migProfiles {
			Expect(got).To(HaveKeyWithValue(p, want[p.(string)]), "profile %s: transformation in demo/kueue/controller-config.yaml against the counters on %s", p, migNode)
		}
	})

	It("charges a MIG claim template on its profile class's line: a second 3g.20gb is held while a 1g.5gb is admitted", func(ctx SpecContext) {
		create(ctx, "team-a", renamed("demo/kueue/mig-claim-job.yaml", "claim-3g-a", nil))
		expectAdmitted(ctx, "team-a", "claim-3g-a")
		pods := expectRunning(ctx, "team-a", "claim-3g-a", 1)
		Expect(pods[0].Spec.NodeName).To(Equal(migNode))

		create(ctx, "team-a", renamed("demo/kueue/mig-claim-job.yaml", "claim-3g-b", nil))
		msg := expectHeld(ctx, "team-a", "claim-3g-b", "insufficient unused quota for nvidia.com/mig-3g.20gb")
		GinkgoWriter.Printf("claim-3g-b held: %s\n", msg)

		create(ctx, "team-a", renamed("demo/kueue/mig-claim-job.yaml", "claim-1g", withProfile("1g.5gb")))
		expectAdmitted(ctx, "team-a", "claim-1g")
		expectRunning(ctx, "team-a", "claim-1g", 1)
		Eventually(ctx, func(g Gomega) {
			total3g, _ := usage(g, ctx, "team-a", "nvidia.com/mig-3g.20gb")
			total1g, _ := usage(g, ctx, "team-a", "nvidia.com/mig-1g.5gb")
			totalSlices, _ := usage(g, ctx, "team-a", slices)
			g.Expect([]int64{total3g, total1g, totalSlices}).To(Equal([]int64{1, 1, 0}), "claim templates are charged devices, never slices")
		}).WithTimeout(admitTimeout).Should(Succeed())
	})

	It("charges MIG asked for in resources.requests by memory slices: a 3g.20gb (4) and a 1g.5gb (1) fill 5, the next 1g.5gb is held", func(ctx SpecContext) {
		create(ctx, "team-a", renamed("demo/kueue/mig-request-job.yaml", "request-3g", nil))
		expectAdmitted(ctx, "team-a", "request-3g")
		create(ctx, "team-a", renamed("demo/kueue/mig-request-job.yaml", "request-1g-a", withProfile("1g.5gb")))
		expectAdmitted(ctx, "team-a", "request-1g-a")
		for _, j := range []string{"request-3g", "request-1g-a"} {
			pods := expectRunning(ctx, "team-a", j, 1)
			Expect(pods[0].Spec.NodeName).To(Equal(migNode))
			Expect(pods[0].Status.ExtendedResourceClaimStatus).NotTo(BeNil(), "the scheduler served %s's extended resource with a DRA claim", j)
		}
		Eventually(ctx, func(g Gomega) {
			total, _ := usage(g, ctx, "team-a", slices)
			g.Expect(total).To(Equal(int64(5)), "4 + 1 memory slices")
		}).WithTimeout(admitTimeout).Should(Succeed())

		create(ctx, "team-a", renamed("demo/kueue/mig-request-job.yaml", "request-1g-b", withProfile("1g.5gb")))
		msg := expectHeld(ctx, "team-a", "request-1g-b", "insufficient unused quota for "+slices)
		GinkgoWriter.Printf("request-1g-b held: %s\n", msg)
	})

	AfterAll(func(ctx SpecContext) {
		deleteJobsAndWait(ctx, "team-a", "claim-3g-a", "claim-3g-b", "claim-1g", "request-3g", "request-1g-a", "request-1g-b")
	})
}

// withProfile turns a MIG fixture of profile 3g.20gb into one of profile p: the claim template's class, or the
// extended resource the container asks for.
func withProfile(p string) func(o *unstructured.Unstructured) {
	return func(o *unstructured.Unstructured) {
		GinkgoHelper()
		switch o.GetKind() {
		case "ResourceClaimTemplate":
			reqs, _, err := unstructured.NestedSlice(o.Object, "spec", "spec", "devices", "requests")
			Expect(err).NotTo(HaveOccurred())
			Expect(reqs).To(HaveLen(1))
			Expect(unstructured.SetNestedField(reqs[0].(map[string]any), "mig-"+p+".nvidia.com", "exactly", "deviceClassName")).To(Succeed())
			Expect(unstructured.SetNestedSlice(o.Object, reqs, "spec", "spec", "devices", "requests")).To(Succeed())
		case "Job":
			ctrs, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			Expect(err).NotTo(HaveOccurred())
			Expect(ctrs).To(HaveLen(1))
			for _, field := range []string{"requests", "limits"} {
				list, found, err := unstructured.NestedStringMap(ctrs[0].(map[string]any), "resources", field)
				Expect(err).NotTo(HaveOccurred())
				if !found {
					continue
				}
				if _, ok := list["nvidia.com/mig-3g.20gb"]; ok {
					delete(list, "nvidia.com/mig-3g.20gb")
					list["nvidia.com/mig-"+p] = "1"
				}
				Expect(unstructured.SetNestedStringMap(ctrs[0].(map[string]any), list, "resources", field)).To(Succeed())
			}
			Expect(unstructured.SetNestedSlice(o.Object, ctrs, "spec", "template", "spec", "containers")).To(Succeed())
		}
	}
}

// transformedSlices reads the memory slices demo/kueue/controller-config.yaml charges per MIG profile.
func transformedSlices() map[string]int64 {
	GinkgoHelper()
	objs := decodeFixture("demo/kueue/controller-config.yaml")
	Expect(objs).To(HaveLen(1))
	ts, _, err := unstructured.NestedSlice(objs[0].Object, "resources", "transformations")
	Expect(err).NotTo(HaveOccurred())
	out := map[string]int64{}
	for _, t := range ts {
		m := t.(map[string]any)
		profile, ok := strings.CutPrefix(m["input"].(string), "nvidia.com/mig-")
		Expect(ok).To(BeTrue(), "transformation input %v", m["input"])
		outputs, _ := m["outputs"].(map[string]any)
		out[profile] = quantity(Default, outputs["nvidia.com/mig-memory-slices"])
	}
	return out
}

// counterSlices counts, per MIG profile, the memory-slice counters its devices on the MIG node consume from their
// GPU's shared counters; every device of one profile must consume the same number.
func counterSlices(ctx SpecContext) map[string]int64 {
	GinkgoHelper()
	list, err := kc.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + migNode})
	Expect(err).NotTo(HaveOccurred())
	out := map[string]int64{}
	sharedCounters := 0
	for _, s := range list.Items {
		sharedCounters += len(s.Spec.SharedCounters)
		for _, d := range s.Spec.Devices {
			if str(d.Attributes["type"]) != "mig" {
				continue
			}
			profile := str(d.Attributes["profile"])
			n := int64(0)
			for _, c := range d.ConsumesCounters {
				for name := range c.Counters {
					if strings.HasPrefix(name, "memory-slice-") {
						n++
					}
				}
			}
			if prev, ok := out[profile]; ok {
				Expect(n).To(Equal(prev), "device %s of profile %s", d.Name, profile)
			}
			out[profile] = n
		}
	}
	Expect(sharedCounters).To(BeNumerically(">", 0), "partitionable MIG publishes shared counters on %s", migNode)
	return out
}

func str(a resourcev1.DeviceAttribute) string {
	if a.StringValue == nil {
		return ""
	}
	return *a.StringValue
}
