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

package charts

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/computedomain-operator/computedomain-operator/internal/testing/envtest"
)

// webhookStartTimeout bounds the webhook server's start.
const webhookStartTimeout = 30 * time.Second

// claimWithConfig is a one-GPU claim carrying parameters as its opaque config for driver.
func claimWithConfig(name, driver, parameters string) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com"}}},
			Config: []resourcev1.DeviceClaimConfiguration{{
				Requests: []string{"gpu"},
				DeviceConfiguration: resourcev1.DeviceConfiguration{Opaque: &resourcev1.OpaqueDeviceConfiguration{
					Driver: driver, Parameters: runtime.RawExtension{Raw: []byte(parameters)},
				}},
			}},
		}},
	}
}

// TestWebhookRefusesUnknownConfigFields installs the chart's ValidatingWebhookConfiguration into a real
// apiserver, runs the webhook binary's Run against it, and creates claims as a user would.
func TestWebhookRefusesUnknownConfigFields(t *testing.T) {
	var hooks []*admissionv1.ValidatingWebhookConfiguration
	for _, o := range byKind(renderChart(t, "computedomain-operator", "--set", "webhook.enabled=true"), "ValidatingWebhookConfiguration") {
		var vwc admissionv1.ValidatingWebhookConfiguration
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &vwc); err != nil {
			t.Fatal(err)
		}
		hooks = append(hooks, &vwc)
	}
	if len(hooks) != 1 || len(hooks[0].Webhooks) != 2 {
		t.Fatalf("want one ValidatingWebhookConfiguration with the claim and template webhooks, got %d", len(hooks))
	}
	root, err := envtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	assets, err := envtest.BinaryAssetsDir(root)
	if err != nil {
		t.Fatal(err)
	}
	env := &ctrlenvtest.Environment{
		BinaryAssetsDirectory: assets,
		WebhookInstallOptions: ctrlenvtest.WebhookInstallOptions{ValidatingWebhooks: hooks},
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	serveWebhook(ctx, t, env)

	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claims := kube.ResourceV1().ResourceClaims("team-a")

	const typo = `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"intervall":"Long"}}}`
	_, err = claims.Create(ctx, claimWithConfig("typo", "gpu.nvidia.com", typo), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "intervall") || !strings.Contains(err.Error(), "spec.devices.config[0].opaque.parameters") {
		t.Errorf("a GpuConfig with the unknown field sharing.timeSlicingConfig.intervall: %v; want Invalid naming the field and where it is", err)
	}

	const good = `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Long"}}}`
	if _, err := claims.Create(ctx, claimWithConfig("good", "gpu.nvidia.com", good), metav1.CreateOptions{}); err != nil {
		t.Errorf("a valid GpuConfig: %v", err)
	}
	if _, err := claims.Create(ctx, claimWithConfig("theirs", "other.example.com", `{"anything":true}`), metav1.CreateOptions{}); err != nil {
		t.Errorf("another driver's config: %v", err)
	}
	const wrongDriver = `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","domainID":"8d3c5e2a-1b4f-4c2e-9a7d-0f6e5d4c3b2a"}`
	_, err = claims.Create(ctx, claimWithConfig("wrong-driver", "gpu.nvidia.com", wrongDriver), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "driver gpu.nvidia.com takes") {
		t.Errorf("a ComputeDomainChannelConfig for the GPU driver: %v; want Invalid naming the kinds the driver takes", err)
	}

	// The resource claim controller's copies of (checked, immutable) templates are not sent: a pod's claims
	// never wait for the webhook. Shown with a claim the webhook would refuse.
	generated := impersonating(t, cfg, "system:serviceaccount:kube-system:resource-claim-controller").ResourceV1().ResourceClaims("team-a")
	if _, err := generated.Create(ctx, claimWithConfig("generated", "gpu.nvidia.com", typo), metav1.CreateOptions{}); err != nil {
		t.Errorf("a claim the resource claim controller generates is not sent to the webhook: %v", err)
	}

	tmpl := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "typo", Namespace: "team-a"},
		Spec:       resourcev1.ResourceClaimTemplateSpec{Spec: claimWithConfig("", "gpu.nvidia.com", typo).Spec},
	}
	_, err = kube.ResourceV1().ResourceClaimTemplates("team-a").Create(ctx, tmpl, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.spec.devices.config[0].opaque.parameters") {
		t.Errorf("a template with the typo: %v; want Invalid naming spec.spec.devices.config[0].opaque.parameters", err)
	}
}
