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

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// firstDenial retries create until the policy that refuses it with msg is loaded (the API server loads
// policies asynchronously), failing the test when it never is, and returns the refusal. create undoes what a
// create before the policy let through and returns nil then.
func firstDenial(t *testing.T, ctx context.Context, what, msg string, create func(context.Context) error) error {
	t.Helper()
	var lastErr error
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, policyLoadTimeout, true, func(ctx context.Context) (bool, error) {
		lastErr = create(ctx)
		return lastErr != nil && strings.Contains(lastErr.Error(), msg), nil
	}); err != nil {
		t.Fatalf("%s was never refused; last answer: %v", what, lastErr)
	}
	return lastErr
}

func claimOfClass(name, ns, class string) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "d", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class}}},
		}},
	}
}

// TestDaemonClaimPolicy: a tenant's claim or template of the daemon device class is refused at admission with
// the rule and the way out; the operator namespace may have them; other classes are not affected.
func TestDaemonClaimPolicy(t *testing.T) {
	env, ctx := installPolicies(t, []string{policyNamespace, "team-a"}, "templates/daemon-claim-policy.yaml")
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	const daemonClass, msg = "compute-domain-daemon.nvidia.com", "is reserved for the operator's IMEX daemons in namespace " + policyNamespace
	lastErr := firstDenial(t, ctx, "a tenant's daemon-class claim", msg, func(ctx context.Context) error {
		_, err := kube.ResourceV1().ResourceClaims("team-a").Create(ctx, claimOfClass("hoard", "team-a", daemonClass), metav1.CreateOptions{})
		if err == nil {
			return kube.ResourceV1().ResourceClaims("team-a").Delete(ctx, "hoard", metav1.DeleteOptions{})
		}
		return err
	})
	if !strings.Contains(lastErr.Error(), "spec.channel.resourceClaimTemplate.name") {
		t.Errorf("the refusal does not say the way out: %v", lastErr)
	}
	tmpl := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "hoard", Namespace: "team-a"},
		Spec:       resourcev1.ResourceClaimTemplateSpec{Spec: claimOfClass("", "", daemonClass).Spec},
	}
	_, err = kube.ResourceV1().ResourceClaimTemplates("team-a").Create(ctx, tmpl, metav1.CreateOptions{})
	wantDenied(t, "a tenant's daemon-class claim template", err, msg)
	first := claimOfClass("first", "team-a", "gpu.nvidia.com")
	first.Spec.Devices.Requests[0] = resourcev1.DeviceRequest{Name: "d", FirstAvailable: []resourcev1.DeviceSubRequest{
		{Name: "gpu", DeviceClassName: "gpu.nvidia.com"}, {Name: "daemon", DeviceClassName: daemonClass},
	}}
	_, err = kube.ResourceV1().ResourceClaims("team-a").Create(ctx, first, metav1.CreateOptions{})
	wantDenied(t, "a tenant's claim with the daemon class among its firstAvailable alternatives", err, msg)

	if _, err := kube.ResourceV1().ResourceClaims(policyNamespace).Create(ctx, claimOfClass("daemon", policyNamespace, daemonClass), metav1.CreateOptions{}); err != nil {
		t.Errorf("a daemon-class claim in the operator namespace: %v", err)
	}
	if _, err := kube.ResourceV1().ResourceClaims("team-a").Create(ctx, claimOfClass("gpu", "team-a", "gpu.nvidia.com"), metav1.CreateOptions{}); err != nil {
		t.Errorf("a tenant's GPU claim: %v", err)
	}
}
