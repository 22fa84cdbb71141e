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
	"context"
	"fmt"
	"math"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"
	"github.com/computedomain-operator/computedomain-operator/e2e/tenants"
	"github.com/computedomain-operator/computedomain-operator/metering"
)

// meteringPullInterval is the metering component's pull interval in this spec: the report's totals must match
// the intervals the spec measured within it.
const meteringPullInterval = time.Second

// meteringTimeout covers the helm upgrade that starts the metering pod, and its restart.
const meteringTimeout = 2 * time.Minute

// teamNamespace creates a namespace of a team.
func teamNamespace(ctx context.Context, team string) string {
	ns := newNamespace(ctx)
	n, err := env.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels["team"] = team
	_, err = env.client.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return ns
}

// holdDevice runs a pod on a node of profile with the claim, and returns once it is Running: the start.
func holdDevice(ctx context.Context, ns, profile string, claim *resourceapi.ResourceClaim) (*corev1.Pod, *resourceapi.ResourceClaim, time.Time) {
	GinkgoHelper()
	created, err := env.client.ResourceV1().ResourceClaims(ns).Create(ctx, claim, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: claim.Name},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{topology.ProfileLabel: profile},
			Containers: []corev1.Container{{Name: "ctr", Image: "ubuntu:24.04", Command: []string{"sleep", "infinity"},
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "dev"}}}}},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "dev", ResourceClaimName: &claim.Name}},
		},
	}
	_, err = env.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	running := runningPod(ctx, ns, pod.Name)
	return running, created, time.Now()
}

// releaseDevice deletes the pod and returns when its claim is unprepared on its node: the end.
func releaseDevice(ctx context.Context, pod *corev1.Pod, claim *resourceapi.ResourceClaim) time.Time {
	GinkgoHelper()
	Expect(env.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})).To(Succeed())
	var end time.Time
	Eventually(ctx, func() ([]string, error) {
		traces, err := env.sim.ClaimTraces(pod.Spec.NodeName, string(claim.UID))
		end = time.Now()
		return traces, err
	}).WithTimeout(podDeleteTimeout).WithPolling(20*time.Millisecond).Should(BeEmpty(), "claim %s unprepared on %s", claim.Name, pod.Spec.NodeName)
	return end
}

// meteringServer waits for a Running metering pod (other than except) and returns its URL.
func meteringServer(ctx context.Context, except string) string {
	GinkgoHelper()
	var url string
	Eventually(ctx, func(g Gomega) {
		var err error
		url, err = tenants.MeteringURL(ctx, env.client, except)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(url).NotTo(BeEmpty(), "a Running metering pod (other than %q)", except)
	}).WithTimeout(meteringTimeout).WithPolling(100*time.Millisecond).Should(Succeed(), func() string {
		return podsSummary(ctx, simcluster.OperatorNamespace)
	})
	return url
}

var _ = Describe("Metering and chargeback for two teams", func() {
	It("bills team a the device-seconds of its GPUs and team b the MIG slice-seconds of its MIG device, as measured, across a restart of the metering component; a time-slicing claim outside a team is refused", func(ctx SpecContext) {
		requireSimulated("helm upgrade with metering on, and the nodes' claim files")
		By("helm upgrade --reuse-values --set metering.enabled=true,sharingPolicy.enabled=true (pull every 1s, MIG billed in slice-seconds)")
		Expect(env.sim.UpgradeOperator(ctx, tenants.ChartValues(meteringPullInterval, map[string]metering.Unit{"mig.nvidia.com": metering.MIGSliceSeconds}))).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(env.sim.UpgradeOperator(ctx, tenants.OffValues())).To(Succeed())
		})
		server := meteringServer(ctx, "")
		from := time.Now()

		teamA, teamB := teamNamespace(ctx, "a"), teamNamespace(ctx, "b")
		noTeam := newNamespace(ctx)

		By("the sharing policy: a time-slicing claim in a namespace of no team is refused, the same claim in team a's is admitted")
		Eventually(ctx, func() error {
			_, err := env.client.ResourceV1().ResourceClaims(noTeam).Create(ctx, tenants.TimeSlicedClaim("shared-gpu"), metav1.CreateOptions{})
			if err == nil {
				_ = env.client.ResourceV1().ResourceClaims(noTeam).Delete(ctx, "shared-gpu", metav1.DeleteOptions{})
				return fmt.Errorf("admitted: the policy is not in force yet")
			}
			return err
		}).WithTimeout(meteringTimeout).Should(MatchError(And(ContainSubstring(tenants.SharingRule), ContainSubstring("has no label team"))))
		_, err := env.client.ResourceV1().ResourceClaims(teamA).Create(ctx, tenants.TimeSlicedClaim("shared-gpu"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred(), "a time-slicing claim inside team a")

		By("team a holds an H100 for ~3 s; team b holds a 2g.10gb MIG device (2 memory slices)")
		gpuPod, gpuClaim, gpuStart := holdDevice(ctx, teamA, "hgx-h100-8", tenants.Claim("gpu-1", "gpu.nvidia.com", ""))
		migPod, migClaim, migStart := holdDevice(ctx, teamB, "a100-40gb-mig", tenants.Claim("mig-1", "mig.nvidia.com", `device.attributes['gpu.nvidia.com'].profile == '2g.10gb'`))
		time.Sleep(3 * time.Second)
		a1 := tenants.Interval{Start: gpuStart, End: releaseDevice(ctx, gpuPod, gpuClaim)}

		By("before the restart the metering pod bills team a its first interval")
		Eventually(ctx, func(g Gomega) {
			r, err := tenants.Report(ctx, server, from, time.Now().Add(time.Minute))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(math.Abs(tenants.Billed(r, "a", metering.DeviceSeconds)-a1.Seconds())).To(BeNumerically("<", meteringPullInterval.Seconds()), "team a: %+v", r.Teams)
		}).WithTimeout(meteringTimeout).WithPolling(500 * time.Millisecond).Should(Succeed())

		By("the metering pod restarts; team b's MIG device is released while it is away")
		old, err := env.client.CoreV1().Pods(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=compute-domain-metering"})
		Expect(err).NotTo(HaveOccurred())
		Expect(old.Items).To(HaveLen(1))
		Expect(env.client.CoreV1().Pods(simcluster.OperatorNamespace).Delete(ctx, old.Items[0].Name, metav1.DeleteOptions{})).To(Succeed())
		time.Sleep(time.Second)
		b1 := tenants.Interval{Start: migStart, End: releaseDevice(ctx, migPod, migClaim)}
		Eventually(ctx, func() bool {
			_, err := env.client.CoreV1().Pods(simcluster.OperatorNamespace).Get(ctx, old.Items[0].Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(meteringTimeout).Should(BeTrue(), "the old metering pod is gone")
		server = meteringServer(ctx, old.Items[0].Name)

		By("team a holds another H100 for ~2 s after the restart")
		gpuPod2, gpuClaim2, gpuStart2 := holdDevice(ctx, teamA, "hgx-h100-8", tenants.Claim("gpu-2", "gpu.nvidia.com", ""))
		time.Sleep(2 * time.Second)
		a2 := tenants.Interval{Start: gpuStart2, End: releaseDevice(ctx, gpuPod2, gpuClaim2)}
		to := time.Now().Add(time.Minute)

		wantA := a1.Seconds() + a2.Seconds()
		wantB := 2 * b1.Seconds()
		By(fmt.Sprintf("the report of [%s, %s): team a %.3f device-seconds, team b %.3f mig-slice-seconds, within one pull interval (%s)", from.Format(time.RFC3339), to.Format(time.RFC3339), wantA, wantB, meteringPullInterval))
		var r metering.Report
		Eventually(ctx, func(g Gomega) {
			var err error
			r, err = tenants.Report(ctx, server, from, to)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tenants.OpenIntervals(r)).To(BeZero(), "every interval of the period is closed in the report: %+v", r.Intervals)
			g.Expect(math.Abs(tenants.Billed(r, "a", metering.DeviceSeconds)-wantA)).To(BeNumerically("<", meteringPullInterval.Seconds()), "team a: %+v", r.Teams)
			g.Expect(math.Abs(tenants.Billed(r, "b", metering.MIGSliceSeconds)-wantB)).To(BeNumerically("<", meteringPullInterval.Seconds()), "team b: %+v", r.Teams)
		}).WithTimeout(meteringTimeout).WithPolling(500 * time.Millisecond).Should(Succeed())
		AddReportEntry("metering", fmt.Sprintf("team a: billed %.3f device-seconds, measured %.3f; team b: billed %.3f mig-slice-seconds, measured %.3f",
			tenants.Billed(r, "a", metering.DeviceSeconds), wantA, tenants.Billed(r, "b", metering.MIGSliceSeconds), wantB))
		GinkgoWriter.Printf("metering: team a billed %.3f device-seconds, measured %.3f; team b billed %.3f mig-slice-seconds, measured %.3f\n",
			tenants.Billed(r, "a", metering.DeviceSeconds), wantA, tenants.Billed(r, "b", metering.MIGSliceSeconds), wantB)
		Expect(r.Rows).To(ContainElement(And(
			HaveField("Team", "b"), HaveField("DeviceClass", "mig.nvidia.com"), HaveField("BillingUnit", metering.MIGSliceSeconds))))

		By("a period that ends before the restart bills only what was held in it")
		mid := a1.Start.Add(a1.End.Sub(a1.Start) / 2)
		half, err := tenants.Report(ctx, server, from, mid)
		Expect(err).NotTo(HaveOccurred())
		Expect(tenants.Billed(half, "a", metering.DeviceSeconds)).To(BeNumerically("~", mid.Sub(a1.Start).Seconds(), meteringPullInterval.Seconds()))
	})
})
