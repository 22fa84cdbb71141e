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
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var _ = Describe("A manifest of an older resource.k8s.io version", func() {
	It("applies and runs as on a cluster that serves resource.k8s.io/v1beta1: a v1beta1 GPU claim gets its GPU", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		claim := &resourcev1beta1.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "old-gpu", Namespace: ns},
			Spec: resourcev1beta1.ResourceClaimSpec{Devices: resourcev1beta1.DeviceClaim{
				Requests: []resourcev1beta1.DeviceRequest{{Name: "gpu", DeviceClassName: "gpu.nvidia.com"}},
			}},
		}
		_, err := env.client.ResourceV1beta1().ResourceClaims(ns).Create(ctx, claim, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred(), "the cluster refuses a resource.k8s.io/v1beta1 ResourceClaim")
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "old-gpu-pod", Namespace: ns},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{
					Name: "ctr", Image: "ubuntu:24.04", Command: []string{"sleep", "infinity"},
					Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}},
				}},
				ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("old-gpu")}},
			},
		}
		_, err = env.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		runningPod(ctx, ns, "old-gpu-pod")
		stored, err := env.client.ResourceV1().ResourceClaims(ns).Get(ctx, "old-gpu", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.Status.Allocation).NotTo(BeNil(), "the v1beta1 claim is allocated")
		Expect(stored.Status.Allocation.Devices.Results).To(HaveLen(1))
		Expect(stored.Status.Allocation.Devices.Results[0].Driver).To(Equal("gpu.nvidia.com"))
	})
})
