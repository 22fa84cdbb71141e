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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// quotaStory: team-a and team-b have 4 GPUs each (nvidia.com/gpu, mapped from gpu.nvidia.com) in the cohort
// gpu-platform; team-a may borrow up to 4 more; both reclaim lent quota by preemption (demo/kueue/teams.yaml).
// Every job is demo/kueue/gpu-job.yaml: 4 pods with one GPU each, charged 4.
func quotaStory() {
	const gpu = "nvidia.com/gpu"

	It("maps every GPU and MIG DeviceClass the chart installed, each to its extended resource name where it has one", func(ctx SpecContext) {
		mappings := deviceClassMappings()
		classes, err := kc.client.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		seen := 0
		for _, c := range classes.Items {
			if c.Name != "gpu.nvidia.com" && !strings.HasPrefix(c.Name, "mig") {
				continue // the compute-domain classes: see topologyStory
			}
			seen++
			Expect(mappings).To(HaveKey(c.Name), "DeviceClass %s mapped in demo/kueue/controller-config.yaml", c.Name)
			if c.Spec.ExtendedResourceName != nil {
				Expect(mappings[c.Name]).To(Equal(*c.Spec.ExtendedResourceName), "DeviceClass %s", c.Name)
			}
		}
		Expect(seen).To(Equal(2+len(migProfiles)), "gpu.nvidia.com, mig.nvidia.com and one class per MIG profile")
	})

	It("admits a team-a job within its quota and its 4 pods run, charged 4 GPUs", func(ctx SpecContext) {
		create(ctx, "team-a", renamed("demo/kueue/gpu-job.yaml", "a1", nil))
		expectAdmitted(ctx, "team-a", "a1")
		expectRunning(ctx, "team-a", "a1", 4)
		Eventually(ctx, func(g Gomega) {
			total, borrowed := usage(g, ctx, "team-a", gpu)
			g.Expect([]int64{total, borrowed}).To(Equal([]int64{4, 0}), "team-a uses 4 GPUs of its own")
		}).WithTimeout(admitTimeout).Should(Succeed())
	})

	It("admits team-b's job within its own quota", func(ctx SpecContext) {
		create(ctx, "team-b", renamed("demo/kueue/gpu-job.yaml", "b1", nil))
		expectAdmitted(ctx, "team-b", "b1")
		expectRunning(ctx, "team-b", "b1", 4)
	})

	It("holds a second team-a job over its quota while the cohort has no spare: suspended, no pods, not admitted", func(ctx SpecContext) {
		create(ctx, "team-a", renamed("demo/kueue/gpu-job.yaml", "a2", nil))
		msg := expectHeld(ctx, "team-a", "a2", "insufficient unused quota for "+gpu)
		GinkgoWriter.Printf("a2 held: %s\n", msg)
	})

	It("admits the held job once team-b's quota is idle, borrowing team-b's 4 GPUs", func(ctx SpecContext) {
		deleteJob(ctx, "team-b", "b1")
		expectAdmitted(ctx, "team-a", "a2")
		expectRunning(ctx, "team-a", "a2", 4)
		Eventually(ctx, func(g Gomega) {
			total, borrowed := usage(g, ctx, "team-a", gpu)
			g.Expect([]int64{total, borrowed}).To(Equal([]int64{8, 4}), "team-a uses 8 GPUs, 4 of them borrowed")
		}).WithTimeout(admitTimeout).Should(Succeed())
	})

	It("preempts the borrowing job when team-b wants its quota back, and holds it again", func(ctx SpecContext) {
		create(ctx, "team-b", renamed("demo/kueue/gpu-job.yaml", "b2", nil))
		expectAdmitted(ctx, "team-b", "b2")
		Eventually(ctx, func(g Gomega) {
			wl := workload(g, ctx, "team-a", "a2")
			preempted := condition(wl, "Preempted")
			g.Expect(isTrue(preempted)).To(BeTrue(), "a2 preempted: %v", wl.Object["status"])
			g.Expect(preempted.Reason).To(Equal("InCohortReclamation"))
		}).WithTimeout(admitTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
		msg := expectHeld(ctx, "team-a", "a2", "insufficient unused quota for "+gpu)
		GinkgoWriter.Printf("a2 held: %s\n", msg)
		expectRunning(ctx, "team-b", "b2", 4)

		By("team-a's job within its own quota kept running")
		Expect(isTrue(condition(workload(Default, ctx, "team-a", "a1"), "Admitted"))).To(BeTrue())
		expectRunning(ctx, "team-a", "a1", 4)
		Eventually(ctx, func(g Gomega) {
			total, borrowed := usage(g, ctx, "team-a", gpu)
			g.Expect([]int64{total, borrowed}).To(Equal([]int64{4, 0}))
		}).WithTimeout(admitTimeout).Should(Succeed())
	})

	It("refuses what it cannot count: a pod naming a pre-made (shareable) ResourceClaim, and allocationMode All", func(ctx SpecContext) {
		By("a Job whose pods share one ResourceClaim made beforehand")
		shared := renamed("demo/kueue/gpu-job.yaml", "shared", func(o *unstructured.Unstructured) {
			switch o.GetKind() {
			case "ResourceClaimTemplate":
				// The template's spec, as a ResourceClaim of its own.
				spec, _, err := unstructured.NestedMap(o.Object, "spec", "spec")
				Expect(err).NotTo(HaveOccurred())
				o.SetKind("ResourceClaim")
				Expect(unstructured.SetNestedMap(o.Object, spec, "spec")).To(Succeed())
			case "Job":
				claims := []any{map[string]any{"name": "gpu", "resourceClaimName": "shared-one-gpu"}}
				Expect(unstructured.SetNestedSlice(o.Object, claims, "spec", "template", "spec", "resourceClaims")).To(Succeed())
			}
		})
		create(ctx, "team-a", shared)
		msg := expectHeld(ctx, "team-a", "shared", "does not support use of resource claims")
		GinkgoWriter.Printf("shared held: %s\n", msg)

		By("a Job whose claim template asks for all GPUs of a node (allocationMode All)")
		create(ctx, "team-a", renamed("demo/kueue/gpu-job.yaml", "all", func(o *unstructured.Unstructured) {
			if o.GetKind() != "ResourceClaimTemplate" {
				return
			}
			exactly := map[string]any{"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}
			reqs := []any{map[string]any{"name": "gpu", "exactly": exactly}}
			Expect(unstructured.SetNestedSlice(o.Object, reqs, "spec", "spec", "devices", "requests")).To(Succeed())
		}))
		msg = expectHeld(ctx, "team-a", "all", "AllocationMode 'All' is not supported")
		GinkgoWriter.Printf("all held: %s\n", msg)
	})

	AfterAll(func(ctx SpecContext) {
		Expect(kc.client.ResourceV1().ResourceClaims("team-a").Delete(ctx, "shared-one-gpu", metav1.DeleteOptions{})).To(Succeed())
		deleteJobsAndWait(ctx, "team-a", "a1", "a2", "shared", "all")
		deleteJobsAndWait(ctx, "team-b", "b2")
	})
}

// deviceClassMappings reads demo/kueue/controller-config.yaml's deviceClassMappings: DeviceClass to logical resource.
func deviceClassMappings() map[string]string {
	GinkgoHelper()
	objs := decodeFixture("demo/kueue/controller-config.yaml")
	Expect(objs).To(HaveLen(1))
	ms, _, err := unstructured.NestedSlice(objs[0].Object, "resources", "deviceClassMappings")
	Expect(err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, m := range ms {
		mm := m.(map[string]any)
		for _, c := range mm["deviceClassNames"].([]any) {
			out[c.(string)] = mm["name"].(string)
		}
	}
	return out
}
