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
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/e2e/tenants"
)

// decodeFixture reads a demo manifest.
func decodeFixture(manifest string) []*unstructured.Unstructured {
	GinkgoHelper()
	objs, err := tenants.DecodeFixture(kc.repoRoot, manifest)
	Expect(err).NotTo(HaveOccurred())
	return objs
}

// apply creates a demo manifest's objects (namespaced ones without a namespace in ns).
func apply(ctx context.Context, ns, manifest string) {
	GinkgoHelper()
	create(ctx, ns, decodeFixture(manifest))
}

func create(ctx context.Context, ns string, objs []*unstructured.Unstructured) {
	GinkgoHelper()
	_, err := kc.applier.Create(ctx, ns, objs)
	Expect(err).NotTo(HaveOccurred())
}

// renamed gives a fixture's Job (and its claim templates) a new name, so one manifest makes several jobs in
// one namespace; edit, when set, changes the objects further.
func renamed(manifest, name string, edit func(o *unstructured.Unstructured)) []*unstructured.Unstructured {
	GinkgoHelper()
	objs := decodeFixture(manifest)
	Expect(tenants.Rename(objs, name, edit)).To(Succeed())
	return objs
}

// job reads a Job.
func job(g Gomega, ctx context.Context, ns, name string) *batchv1.Job {
	j, err := kc.client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return j
}

// workload is the Kueue Workload of a Job (Kueue labels it with the Job's UID).
func workload(g Gomega, ctx context.Context, ns, jobName string) *unstructured.Unstructured {
	wl, _, err := tenants.JobWorkload(ctx, kc.client, kc.dynamic, ns, jobName)
	g.Expect(err).NotTo(HaveOccurred())
	return wl
}

// condition is a Workload's condition of type t (nil when it has none).
func condition(wl *unstructured.Unstructured, t string) *metav1.Condition {
	return tenants.Condition(wl, t)
}

func isTrue(c *metav1.Condition) bool { return tenants.IsTrue(c) }

// expectAdmitted waits until Kueue admits the Job's Workload and the Job controller, unsuspended, made its pods.
func expectAdmitted(ctx context.Context, ns, jobName string) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		wl := workload(g, ctx, ns, jobName)
		g.Expect(isTrue(condition(wl, "Admitted"))).To(BeTrue(), "Workload of %s admitted: %v", jobName, wl.Object["status"])
		g.Expect(ptr.Deref(job(g, ctx, ns, jobName).Spec.Suspend, false)).To(BeFalse(), "Job %s unsuspended", jobName)
	}).WithTimeout(admitTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
}

// expectHeld waits until the Job's Workload says why Kueue holds it (its QuotaReserved condition False with a
// message containing why), then watches the Job stay suspended with no pods and its Workload without quota for
// heldTime. It returns the message.
func expectHeld(ctx context.Context, ns, jobName, why string) string {
	GinkgoHelper()
	var msg string
	Eventually(ctx, func(g Gomega) {
		c := condition(workload(g, ctx, ns, jobName), "QuotaReserved")
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring(why))
		msg = c.Message
	}).WithTimeout(admitTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	Consistently(ctx, func(g Gomega) {
		wl := workload(g, ctx, ns, jobName)
		g.Expect(isTrue(condition(wl, "QuotaReserved"))).To(BeFalse(), "no quota for %s", jobName)
		g.Expect(isTrue(condition(wl, "Admitted"))).To(BeFalse(), "%s not admitted", jobName)
		g.Expect(ptr.Deref(job(g, ctx, ns, jobName).Spec.Suspend, false)).To(BeTrue(), "Job %s suspended", jobName)
		g.Expect(jobPods(g, ctx, ns, jobName)).To(BeEmpty(), "no pod of %s", jobName)
	}).WithTimeout(heldTime).WithPolling(200 * time.Millisecond).Should(Succeed())
	return msg
}

// jobPods are the pods of a Job that have not ended.
func jobPods(g Gomega, ctx context.Context, ns, jobName string) []corev1.Pod {
	pods, err := kc.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + jobName})
	g.Expect(err).NotTo(HaveOccurred())
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// expectRunning waits until n pods of the Job run.
func expectRunning(ctx context.Context, ns, jobName string, n int) []corev1.Pod {
	GinkgoHelper()
	var running []corev1.Pod
	Eventually(ctx, func(g Gomega) {
		running = nil
		for _, p := range jobPods(g, ctx, ns, jobName) {
			if p.Status.Phase == corev1.PodRunning {
				running = append(running, p)
			}
		}
		g.Expect(running).To(HaveLen(n))
	}).WithTimeout(podStartTimeout).WithPolling(100*time.Millisecond).Should(Succeed(), func() string { return simcluster.PodsSummary(ctx, kc.client, ns) })
	return running
}

// deleteJob deletes a Job and its pods (background propagation).
func deleteJob(ctx context.Context, ns, name string) {
	GinkgoHelper()
	Expect(kc.client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})).To(Succeed())
}

// deleteJobsAndWait deletes Jobs and waits until their pods and claims are gone, so their devices are free for
// the next story.
func deleteJobsAndWait(ctx context.Context, ns string, names ...string) {
	GinkgoHelper()
	for _, n := range names {
		deleteJob(ctx, ns, n)
	}
	jobsGone(ctx, ns, names...)
}

// jobsGone waits until the pods of deleted Jobs and the claims of their namespace are gone.
func jobsGone(ctx context.Context, ns string, names ...string) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		for _, n := range names {
			pods, err := kc.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + n})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods.Items).To(BeEmpty(), "pods of %s/%s gone", ns, n)
		}
		claims, err := kc.client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(claims.Items).To(BeEmpty(), "claims of %s gone", ns)
	}).WithTimeout(podStartTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// usage is a ClusterQueue's flavorsUsage of one resource (total, borrowed) as Kueue reports it.
func usage(g Gomega, ctx context.Context, cq, res string) (total, borrowed int64) {
	total, borrowed, err := tenants.QueueUsage(ctx, kc.dynamic, cq, res)
	g.Expect(err).NotTo(HaveOccurred())
	return total, borrowed
}

func quantity(g Gomega, v any) int64 {
	q, err := tenants.Quantity(v)
	g.Expect(err).NotTo(HaveOccurred())
	return q
}
