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
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	meteringapp "github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-metering/app"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"
	"github.com/computedomain-operator/computedomain-operator/metering"
)

// meteringPullInterval is the metering component's pull interval in this spec: the report's totals must match
// the intervals the spec measured within it.
const meteringPullInterval = time.Second

// meteringTimeout covers the helm upgrade that starts the metering pod, and its restart.
const meteringTimeout = 2 * time.Minute

// measured is an allocation interval as the spec saw it: from the pod Running to its claim gone from its node.
type measured struct {
	start, end time.Time
}

func (m measured) seconds() float64 { return m.end.Sub(m.start).Seconds() }

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

// meteredClaim is a ResourceClaim of one device of class on nodes of profile, with an optional CEL selector.
func meteredClaim(name, class, selector string) *resourceapi.ResourceClaim {
	req := resourceapi.ExactDeviceRequest{DeviceClassName: class}
	if selector != "" {
		req.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: selector}}}
	}
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "dev", Exactly: &req}}}},
	}
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

// meteringServer is the URL of the running metering pod.
func meteringServer(ctx context.Context, except string) string {
	GinkgoHelper()
	var url string
	Eventually(ctx, func(g Gomega) {
		pods, err := env.client.CoreV1().Pods(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=compute-domain-metering"})
		g.Expect(err).NotTo(HaveOccurred())
		url = ""
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && p.Status.PodIP != "" && p.Name != except {
				url = "http://" + net.JoinHostPort(p.Status.PodIP, "8080")
			}
		}
		g.Expect(url).NotTo(BeEmpty(), "a Running metering pod (other than %q): %s", except, podsSummary(ctx, simcluster.OperatorNamespace))
	}).WithTimeout(meteringTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	return url
}

// report asks the metering component for the report of [from, to), as `compute-domain-metering report` does.
func report(ctx context.Context, server string, from, to time.Time) (metering.Report, error) {
	var out bytes.Buffer
	err := meteringapp.Report(ctx, []string{"--server=" + server, "--from=" + from.UTC().Format(time.RFC3339Nano), "--to=" + to.UTC().Format(time.RFC3339Nano), "--format=json"}, &out)
	if err != nil {
		return metering.Report{}, err
	}
	var r metering.Report
	return r, json.Unmarshal(out.Bytes(), &r)
}

func billed(r metering.Report, team string, unit metering.Unit) float64 {
	for _, t := range r.Teams {
		if t.Team == team {
			return t.Billed[unit]
		}
	}
	return 0
}

func openIntervals(r metering.Report) int {
	n := 0
	for _, iv := range r.Intervals {
		if iv.Open {
			n++
		}
	}
	return n
}

const timeSlicingConfig = `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing"}}`

func timeSlicedClaim() *resourceapi.ResourceClaim {
	c := meteredClaim("shared-gpu", "gpu.nvidia.com", "")
	c.Spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{{DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
		Driver: "gpu.nvidia.com", Parameters: runtime.RawExtension{Raw: []byte(timeSlicingConfig)},
	}}}}
	return c
}

var _ = Describe("Metering and chargeback for two teams", func() {
	It("bills team a the device-seconds of its GPUs and team b the MIG slice-seconds of its MIG device, as measured, across a restart of the metering component; a time-slicing claim outside a team is refused", func(ctx SpecContext) {
		requireSimulated("helm upgrade with metering on, and the nodes' claim files")
		By("helm upgrade --reuse-values --set metering.enabled=true,sharingPolicy.enabled=true (pull every 1s, MIG billed in slice-seconds)")
		Expect(env.sim.UpgradeOperator(ctx, map[string]any{
			"sharingPolicy": map[string]any{"enabled": true},
			"metering": map[string]any{"enabled": true, "pullInterval": meteringPullInterval.String(),
				"billingUnits": map[string]any{"mig.nvidia.com": string(metering.MIGSliceSeconds)}},
		})).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(env.sim.UpgradeOperator(ctx, map[string]any{"sharingPolicy": map[string]any{"enabled": false}, "metering": map[string]any{"enabled": false}})).To(Succeed())
		})
		server := meteringServer(ctx, "")
		from := time.Now()

		teamA, teamB := teamNamespace(ctx, "a"), teamNamespace(ctx, "b")
		noTeam := newNamespace(ctx)

		By("the sharing policy: a time-slicing claim in a namespace of no team is refused, the same claim in team a's is admitted")
		Eventually(ctx, func() error {
			_, err := env.client.ResourceV1().ResourceClaims(noTeam).Create(ctx, timeSlicedClaim(), metav1.CreateOptions{})
			if err == nil {
				_ = env.client.ResourceV1().ResourceClaims(noTeam).Delete(ctx, "shared-gpu", metav1.DeleteOptions{})
				return fmt.Errorf("admitted: the policy is not in force yet")
			}
			return err
		}).WithTimeout(meteringTimeout).Should(MatchError(And(ContainSubstring("software-sharing-inside-a-team"), ContainSubstring("has no label team"))))
		_, err := env.client.ResourceV1().ResourceClaims(teamA).Create(ctx, timeSlicedClaim(), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred(), "a time-slicing claim inside team a")

		By("team a holds an H100 for ~3 s; team b holds a 2g.10gb MIG device (2 memory slices)")
		gpuPod, gpuClaim, gpuStart := holdDevice(ctx, teamA, "hgx-h100-8", meteredClaim("gpu-1", "gpu.nvidia.com", ""))
		migPod, migClaim, migStart := holdDevice(ctx, teamB, "a100-40gb-mig", meteredClaim("mig-1", "mig.nvidia.com", `device.attributes['gpu.nvidia.com'].profile == '2g.10gb'`))
		time.Sleep(3 * time.Second)
		a1 := measured{gpuStart, releaseDevice(ctx, gpuPod, gpuClaim)}

		By("before the restart the metering pod bills team a its first interval")
		Eventually(ctx, func(g Gomega) {
			r, err := report(ctx, server, from, time.Now().Add(time.Minute))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(math.Abs(billed(r, "a", metering.DeviceSeconds)-a1.seconds())).To(BeNumerically("<", meteringPullInterval.Seconds()), "team a: %+v", r.Teams)
		}).WithTimeout(meteringTimeout).WithPolling(500 * time.Millisecond).Should(Succeed())

		By("the metering pod restarts; team b's MIG device is released while it is away")
		old, err := env.client.CoreV1().Pods(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=compute-domain-metering"})
		Expect(err).NotTo(HaveOccurred())
		Expect(old.Items).To(HaveLen(1))
		Expect(env.client.CoreV1().Pods(simcluster.OperatorNamespace).Delete(ctx, old.Items[0].Name, metav1.DeleteOptions{})).To(Succeed())
		time.Sleep(time.Second)
		b1 := measured{migStart, releaseDevice(ctx, migPod, migClaim)}
		Eventually(ctx, func() bool {
			_, err := env.client.CoreV1().Pods(simcluster.OperatorNamespace).Get(ctx, old.Items[0].Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(meteringTimeout).Should(BeTrue(), "the old metering pod is gone")
		server = meteringServer(ctx, old.Items[0].Name)

		By("team a holds another H100 for ~2 s after the restart")
		gpuPod2, gpuClaim2, gpuStart2 := holdDevice(ctx, teamA, "hgx-h100-8", meteredClaim("gpu-2", "gpu.nvidia.com", ""))
		time.Sleep(2 * time.Second)
		a2 := measured{gpuStart2, releaseDevice(ctx, gpuPod2, gpuClaim2)}
		to := time.Now().Add(time.Minute)

		wantA := a1.seconds() + a2.seconds()
		wantB := 2 * b1.seconds()
		By(fmt.Sprintf("the report of [%s, %s): team a %.3f device-seconds, team b %.3f mig-slice-seconds, within one pull interval (%s)", from.Format(time.RFC3339), to.Format(time.RFC3339), wantA, wantB, meteringPullInterval))
		var r metering.Report
		Eventually(ctx, func(g Gomega) {
			var err error
			r, err = report(ctx, server, from, to)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(openIntervals(r)).To(BeZero(), "every interval of the period is closed in the report: %+v", r.Intervals)
			g.Expect(math.Abs(billed(r, "a", metering.DeviceSeconds)-wantA)).To(BeNumerically("<", meteringPullInterval.Seconds()), "team a: %+v", r.Teams)
			g.Expect(math.Abs(billed(r, "b", metering.MIGSliceSeconds)-wantB)).To(BeNumerically("<", meteringPullInterval.Seconds()), "team b: %+v", r.Teams)
		}).WithTimeout(meteringTimeout).WithPolling(500 * time.Millisecond).Should(Succeed())
		AddReportEntry("metering", fmt.Sprintf("team a: billed %.3f device-seconds, measured %.3f; team b: billed %.3f mig-slice-seconds, measured %.3f",
			billed(r, "a", metering.DeviceSeconds), wantA, billed(r, "b", metering.MIGSliceSeconds), wantB))
		GinkgoWriter.Printf("metering: team a billed %.3f device-seconds, measured %.3f; team b billed %.3f mig-slice-seconds, measured %.3f\n",
			billed(r, "a", metering.DeviceSeconds), wantA, billed(r, "b", metering.MIGSliceSeconds), wantB)
		Expect(r.Rows).To(ContainElement(And(
			HaveField("Team", "b"), HaveField("DeviceClass", "mig.nvidia.com"), HaveField("BillingUnit", metering.MIGSliceSeconds))))

		By("a period that ends before the restart bills only what was held in it")
		mid := a1.start.Add(a1.end.Sub(a1.start) / 2)
		half, err := report(ctx, server, from, mid)
		Expect(err).NotTo(HaveOccurred())
		Expect(billed(half, "a", metering.DeviceSeconds)).To(BeNumerically("~", mid.Sub(a1.start).Seconds(), meteringPullInterval.Seconds()))
	})
})
