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
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
	"github.com/computedomain-operator/computedomain-operator/internal/testing/envtest"
)

// The sharing policy's rules as its refusals name them.
const (
	softwareSharingRule = "rule software-sharing-inside-a-team"
	consumableRule      = "rule consumable-capacity-inside-a-team"
)

// sharingClaim is a claim of one request "gpu" of class, with the opaque GPU config cfg (nil: none) for the
// gpu.nvidia.com driver.
func sharingClaim(name, ns, class string, cfg any) *resourcev1.ResourceClaim {
	c := claimOfClass(name, ns, class)
	c.Spec.Devices.Requests[0].Name = "gpu"
	if cfg != nil {
		raw, err := json.Marshal(cfg)
		if err != nil {
			panic(err)
		}
		c.Spec.Devices.Config = []resourcev1.DeviceClaimConfiguration{{DeviceConfiguration: resourcev1.DeviceConfiguration{
			Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: "gpu.nvidia.com", Parameters: runtime.RawExtension{Raw: raw}},
		}}}
	}
	return c
}

// withCapacity asks for a share of memory of the device (consumable capacity).
func withCapacity(c *resourcev1.ResourceClaim, memory string) *resourcev1.ResourceClaim {
	c.Spec.Devices.Requests[0].Exactly.Capacity = &resourcev1.CapacityRequirements{
		Requests: map[resourcev1.QualifiedName]resource.Quantity{"memory": resource.MustParse(memory)},
	}
	return c
}

// installSharingPolicy starts a real kube-apiserver with the namespaces (name -> labels) and the sharing policy
// rendered with the multi-tenant ci values (the policy's default rules; team-a owns class shared-gpu-team-a).
func installSharingPolicy(t *testing.T, namespaces map[string]map[string]string, helmArgs ...string) (kubernetes.Interface, context.Context) {
	t.Helper()
	env, err := envtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	for name, labels := range namespaces {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	objs := renderChart(t, policyNamespace, append([]string{"-f", multiTenantValues, "--show-only", "templates/sharing-policy.yaml"}, helmArgs...)...)
	if len(byKind(objs, "ValidatingAdmissionPolicy")) != 1 {
		t.Fatalf("the chart renders no sharing policy with %s", multiTenantValues)
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	return kube, ctx
}

// createOnce creates the claim and, when it is admitted, deletes it again, returning the admission's answer.
func createOnce(ctx context.Context, kube kubernetes.Interface, c *resourcev1.ResourceClaim) error {
	claims := kube.ResourceV1().ResourceClaims(c.Namespace)
	if _, err := claims.Create(ctx, c, metav1.CreateOptions{}); err != nil {
		return err
	}
	return claims.Delete(ctx, c.Name, metav1.DeleteOptions{})
}

// TestSharingPolicy: on a cluster of teams (namespace label team), a time-slicing claim in a namespace of no team
// (shared by whoever works there) is refused under the default rules, naming the field, the rule and the ways
// out; the same claim inside one team is admitted. MPS is kept inside a team the same way, for claims and
// templates; exclusive GPUs and MIG devices go to any namespace; a capacity request is a share of a device only
// outside the chart's exclusive classes, and then only on the team's own class.
func TestSharingPolicy(t *testing.T) {
	kube, ctx := installSharingPolicy(t, map[string]map[string]string{
		"shared": nil, "team-a": {"team": "team-a"}, "team-b": {"team": "team-b"},
	})
	timeSlicing := utiltesting.MakeGpuConfig().TimeSlicing("Long").Obj()
	mps := utiltesting.MakeMigDeviceConfig().MPS(nil).Obj()

	lastErr := firstDenial(t, ctx, "a time-slicing claim in a namespace of no team", softwareSharingRule, func(ctx context.Context) error {
		return createOnce(ctx, kube, sharingClaim("ts", "shared", "gpu.nvidia.com", timeSlicing))
	})
	for _, want := range []string{
		"ResourceClaim shared/ts: spec.devices.config[].opaque.parameters.sharing.strategy TimeSlicing",
		"namespace shared has no label team", "labeled team=<team>", "exclusive GPU (class gpu.nvidia.com)",
	} {
		if !strings.Contains(lastErr.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, lastErr)
		}
	}
	if err := createOnce(ctx, kube, sharingClaim("ts", "team-a", "gpu.nvidia.com", timeSlicing)); err != nil {
		t.Errorf("the same time-slicing claim inside team-a: %v", err)
	}

	mpsTemplate := func(ns string) *resourcev1.ResourceClaimTemplate {
		return &resourcev1.ResourceClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: "mps", Namespace: ns},
			Spec:       resourcev1.ResourceClaimTemplateSpec{Spec: sharingClaim("", "", "mig.nvidia.com", mps).Spec},
		}
	}
	_, err := kube.ResourceV1().ResourceClaimTemplates("shared").Create(ctx, mpsTemplate("shared"), metav1.CreateOptions{})
	wantDenied(t, "an MPS claim template in a namespace of no team", err,
		"ResourceClaimTemplate shared/mps: spec.spec.devices.config[].opaque.parameters.sharing.strategy MPS")
	if _, err := kube.ResourceV1().ResourceClaimTemplates("team-b").Create(ctx, mpsTemplate("team-b"), metav1.CreateOptions{}); err != nil {
		t.Errorf("an MPS claim template inside team-b: %v", err)
	}

	for name, c := range map[string]*resourcev1.ResourceClaim{
		"an exclusive GPU":                   sharingClaim("gpu", "shared", "gpu.nvidia.com", nil),
		"a MIG device of one profile":        sharingClaim("mig", "shared", "mig-1g.10gb.nvidia.com", nil),
		"a GPU of at least 80Gi (exclusive)": withCapacity(sharingClaim("big", "shared", "gpu.nvidia.com", nil), "80Gi"),
		"a team-a share of team-a's GPUs":    withCapacity(sharingClaim("share", "team-a", "shared-gpu-team-a", timeSlicing), "10Gi"),
	} {
		if err := createOnce(ctx, kube, c); err != nil {
			t.Errorf("%s in namespace %s: %v", name, c.Namespace, err)
		}
	}

	err = createOnce(ctx, kube, withCapacity(sharingClaim("share", "team-b", "shared-gpu-team-a", nil), "10Gi"))
	wantDenied(t, "team-b's share of team-a's GPUs", err, consumableRule)
	if err != nil && !strings.Contains(err.Error(), "Use a device class of team team-b (sharingPolicy.teamDeviceClasses: none)") {
		t.Errorf("the refusal does not name the team's classes: %v", err)
	}
	err = createOnce(ctx, kube, withCapacity(sharingClaim("share", "shared", "shared-gpu-team-a", nil), "10Gi"))
	wantDenied(t, "a share of a device from a namespace of no team", err, "Namespace shared has no label team naming its team")
	err = createOnce(ctx, kube, withCapacity(sharingClaim("share", "team-a", "any-shared-gpu", timeSlicing), "10Gi"))
	wantDenied(t, "team-a time-slicing a device of a class every team can share", err, "inside one team")
}

// TestSharingPolicyWithConsumableShares: with consumableShares the chart's GPU classes are consumable shares, so
// every claim of them (capacity.requests or not) may share its device with other teams, with no isolation: under
// the default rules it is refused naming the rule and the way out, and a team shares GPUs through its own class.
func TestSharingPolicyWithConsumableShares(t *testing.T) {
	kube, ctx := installSharingPolicy(t, map[string]map[string]string{"shared": nil, "team-a": {"team": "team-a"}},
		"-f", filepath.Join(chartDir, "ci", "consumable-shares-values.yaml"))
	timeSlicing := utiltesting.MakeGpuConfig().TimeSlicing("Long").Obj()
	lastErr := firstDenial(t, ctx, "a plain GPU claim in team-a, a share other teams can hold too", consumableRule, func(ctx context.Context) error {
		return createOnce(ctx, kube, sharingClaim("gpu", "team-a", "gpu.nvidia.com", nil))
	})
	for _, want := range []string{"request(s) gpu ask for a share of a device (consumableShares memory", "Use a device class of team team-a (sharingPolicy.teamDeviceClasses: shared-gpu-team-a)", "sharingPolicy.crossTeam.consumableCapacity: true"} {
		if !strings.Contains(lastErr.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, lastErr)
		}
	}
	wantDenied(t, "a MIG claim in a namespace of no team", createOnce(ctx, kube, sharingClaim("mig", "shared", "mig.nvidia.com", nil)), "Namespace shared has no label team")
	wantDenied(t, "time-slicing a share of gpu.nvidia.com inside team-a", createOnce(ctx, kube, sharingClaim("ts", "team-a", "gpu.nvidia.com", timeSlicing)), softwareSharingRule)
	if err := createOnce(ctx, kube, sharingClaim("share", "team-a", "shared-gpu-team-a", timeSlicing)); err != nil {
		t.Errorf("a time-sliced share of team-a's own GPUs: %v", err)
	}
}

// TestSharingPolicyTreatsPassthroughAsHardwareIsolation: a vfio device is a whole GPU handed to one VM, never a
// share, so any namespace may claim one, even with capacity.requests and with consumable shares of the GPU classes
// on; a request of a class every team can share is still refused.
func TestSharingPolicyTreatsPassthroughAsHardwareIsolation(t *testing.T) {
	kube, ctx := installSharingPolicy(t, map[string]map[string]string{"shared": nil},
		"-f", filepath.Join(chartDir, "ci", "consumable-shares-values.yaml"), "-f", filepath.Join(chartDir, "ci", "passthrough-values.yaml"))
	_ = firstDenial(t, ctx, "a share of a GPU in a namespace of no team", consumableRule, func(ctx context.Context) error {
		return createOnce(ctx, kube, sharingClaim("gpu", "shared", "gpu.nvidia.com", nil))
	})
	for name, c := range map[string]*resourcev1.ResourceClaim{
		"a GPU for a VM":                         sharingClaim("vm", "shared", "vfio.gpu.nvidia.com", nil),
		"a GPU for a VM with 64Gi of BAR memory": withCapacity(sharingClaim("vm-big", "shared", "vfio.gpu.nvidia.com", nil), "64Gi"),
	} {
		if err := createOnce(ctx, kube, c); err != nil {
			t.Errorf("%s in a namespace of no team: %v", name, err)
		}
	}
}

// TestSharingPolicyChecksOnlySpecChanges: an admitted time-slicing claim whose namespace later leaves its team
// can still be updated without a spec change (so the resource claim controller can remove its finalizer), while
// a new one there is refused.
func TestSharingPolicyChecksOnlySpecChanges(t *testing.T) {
	kube, ctx := installSharingPolicy(t, map[string]map[string]string{"team-a": {"team": "team-a"}})
	timeSlicing := utiltesting.MakeGpuConfig().TimeSlicing("").Obj()
	claims := kube.ResourceV1().ResourceClaims("team-a")
	if _, err := claims.Create(ctx, sharingClaim("kept", "team-a", "gpu.nvidia.com", timeSlicing), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a time-slicing claim inside team-a: %v", err)
	}
	ns, err := kube.CoreV1().Namespaces().Get(ctx, "team-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(ns.Labels, "team")
	if _, err := kube.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_ = firstDenial(t, ctx, "a new time-slicing claim once the namespace left its team", softwareSharingRule, func(ctx context.Context) error {
		return createOnce(ctx, kube, sharingClaim("new", "team-a", "gpu.nvidia.com", timeSlicing))
	})
	const finalizer = "resource.kubernetes.io/delete-protection"
	for _, change := range []func(*resourcev1.ResourceClaim){
		func(c *resourcev1.ResourceClaim) { c.Finalizers = append(c.Finalizers, finalizer) },
		func(c *resourcev1.ResourceClaim) { c.Finalizers = nil },
	} {
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, policyLoadTimeout, true, func(ctx context.Context) (bool, error) {
			c, err := claims.Get(ctx, "kept", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			change(c)
			_, err = claims.Update(ctx, c, metav1.UpdateOptions{})
			return err == nil, nil
		}); err != nil {
			c, _ := claims.Get(ctx, "kept", metav1.GetOptions{})
			_, err = claims.Update(ctx, c, metav1.UpdateOptions{})
			t.Fatalf("a finalizer update of the admitted claim: %v", err)
		}
	}
}

// policyRules is what a rendered sharing policy checks: the sharing strategies it keeps inside a team (a JSON
// list) and whether it keeps capacity requests inside a team.
type policyRules struct {
	strategies string
	capacity   bool
}

// TestSharingPolicyValues: the policy is opt-in (a cluster of one team has no boundary to keep, and manifests
// written for NVIDIA's driver run unchanged), a sharing mode allowed across teams is no longer checked, and
// with every mode allowed there is no policy at all.
func TestSharingPolicyValues(t *testing.T) {
	cases := map[string]struct {
		args []string
		// want is nil where no policy renders.
		want *policyRules
	}{
		"default values: no policy": {},
		"enabled with its default rules": {args: []string{"--set", "sharingPolicy.enabled=true"},
			want: &policyRules{`["TimeSlicing","MPS"]`, true}},
		"time-slicing and consumable shares allowed across teams": {args: []string{"--set",
			"sharingPolicy.enabled=true,sharingPolicy.crossTeam.timeSlicing=true,sharingPolicy.crossTeam.consumableCapacity=true"},
			want: &policyRules{`["MPS"]`, false}},
		"every mode allowed across teams: no policy": {args: []string{"--set",
			"sharingPolicy.enabled=true,sharingPolicy.crossTeam.timeSlicing=true,sharingPolicy.crossTeam.mps=true,sharingPolicy.crossTeam.consumableCapacity=true"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var policy *unstructured.Unstructured
			for _, o := range byKind(renderChart(t, policyNamespace, tc.args...), "ValidatingAdmissionPolicy") {
				if o.GetName() == "computedomain-operator-sharing" {
					policy = o
				}
			}
			if (policy != nil) != (tc.want != nil) {
				t.Fatalf("sharing policy rendered: %v, want %v", policy != nil, tc.want != nil)
			}
			if policy == nil {
				return
			}
			vars, _, _ := unstructured.NestedSlice(policy.Object, "spec", "variables")
			var restricted string
			for _, v := range vars {
				if m := v.(map[string]any); m["name"] == "restrictedSharing" {
					restricted, _ = m["expression"].(string)
				}
			}
			if !strings.Contains(restricted, "in "+tc.want.strategies+")") {
				t.Errorf("restrictedSharing = %q, want the strategies %s", restricted, tc.want.strategies)
			}
			validations, _, _ := unstructured.NestedSlice(policy.Object, "spec", "validations")
			capacity := false
			for _, v := range validations {
				if msg, _ := v.(map[string]any)["messageExpression"].(string); strings.Contains(msg, consumableRule) {
					capacity = true
				}
			}
			if capacity != tc.want.capacity {
				t.Errorf("checks capacity requests: %v, want %v", capacity, tc.want.capacity)
			}
		})
	}
}
