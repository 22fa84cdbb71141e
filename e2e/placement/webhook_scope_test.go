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

package placement

import (
	"bufio"
	"bytes"
	"context"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// podGroupWebhook is the chart's pod-group webhook (charts/computedomain-operator/templates/webhook.yaml).
const podGroupWebhook = "pods.pod-groups.resource.nvidia.com"

// The pod-group webhook is on by default, so its scope is every cluster's concern: the API server must send it
// only pods that use a claim template and name no scheduling group (its matchConditions), and admit every other
// pod without a call. The API server's own counter of webhook calls is the witness.
var _ = Describe("The pod-group webhook's scope", func() {
	It("is called for a pod that uses a claim template, and never for pods without one or with a scheduling group of their own", func(ctx SpecContext) {
		c := pc
		ns := c.Namespace(ctx)
		DeferCleanup(func(ctx SpecContext) { c.DeleteNamespace(ctx, ns) })

		before := webhookCalls(ctx)
		By("creating pods the webhook must not see: no claims, a pre-made claim, a claim template with its own scheduling group")
		for _, pod := range []*corev1.Pod{
			scopePod("no-claims", nil, nil),
			scopePod("premade-claim", &corev1.PodResourceClaim{Name: "gpu", ResourceClaimName: ptr.To("someone-elses-claim")}, nil),
			scopePod("own-group", &corev1.PodResourceClaim{Name: "gpu", ResourceClaimTemplateName: ptr.To("single-gpu")},
				&corev1.PodSchedulingGroup{PodGroupName: ptr.To("their-own-group")}),
		} {
			_, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred(), pod.Name)
		}
		Consistently(ctx, webhookCalls).WithTimeout(3*time.Second).WithPolling(500*time.Millisecond).
			Should(Equal(before), "calls of %s for pods outside its matchConditions", podGroupWebhook)

		By("creating a pod with a claim template: the API server calls the webhook")
		_, err := c.Client.CoreV1().Pods(ns).Create(ctx,
			scopePod("template", &corev1.PodResourceClaim{Name: "gpu", ResourceClaimTemplateName: ptr.To("single-gpu")}, nil), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(ctx, webhookCalls).WithTimeout(10 * time.Second).Should(BeNumerically(">", before))
	})
})

// scopePod is a pod that never runs (its node does not exist), with claim and group when they are not nil.
func scopePod(name string, claim *corev1.PodResourceClaim, group *corev1.PodSchedulingGroup) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeSelector:    map[string]string{"kubernetes.io/hostname": "no-such-node"},
			Containers:      []corev1.Container{{Name: "ctr", Image: "ubuntu:24.04"}},
			SchedulingGroup: group,
		},
	}
	if claim != nil {
		pod.Spec.ResourceClaims = []corev1.PodResourceClaim{*claim}
		pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: claim.Name}}
	}
	return pod
}

// webhookCalls is the API server's apiserver_admission_webhook_request_total for the pod-group webhook, summed
// over its labels (operation, code, rejected).
func webhookCalls(ctx context.Context) float64 {
	GinkgoHelper()
	raw, err := pc.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	scanner := bufio.NewScanner(bytes.NewReader(raw))
	scanner.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.HasPrefix(line, "apiserver_admission_webhook_request_total{") || !strings.Contains(line, `name="`+podGroupWebhook+`"`) {
			continue
		}
		value, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		Expect(err).NotTo(HaveOccurred(), line)
		total += value
	}
	Expect(scanner.Err()).NotTo(HaveOccurred())
	return total
}
