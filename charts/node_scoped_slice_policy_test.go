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

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

const (
	policyNamespace = "cdo-system"
	// pluginUser is the kubelet plugins' service account as the chart names it.
	pluginUser = "system:serviceaccount:" + policyNamespace + ":compute-domain-kubelet-plugin"
	// nodeNameExtra is the user-info extra a node-bound service account token carries.
	nodeNameExtra = "authentication.kubernetes.io/node-name"
	// policyLoadTimeout bounds how long the apiserver takes to start enforcing a new policy.
	policyLoadTimeout = 30 * time.Second
)

// pluginClient acts as the kubelet plugins' service account with a token bound to node (no node: a token that
// is not node-bound).
func pluginClient(t *testing.T, cfg *rest.Config, node string) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(asServiceAccount(cfg, pluginUser, node))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// asServiceAccount is cfg acting as the service account user (in policyNamespace) with a token bound to node
// (no node: a token that is not node-bound).
func asServiceAccount(cfg *rest.Config, user, node string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: user,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + policyNamespace, "system:authenticated"},
	}
	if node != "" {
		cfg.Impersonate.Extra = map[string][]string{nodeNameExtra: {node}}
	}
	return cfg
}

func slice(name, node string) *resourcev1.ResourceSlice {
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   "gpu.nvidia.com",
			NodeName: ptr.To(node),
			Pool:     resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1},
			Devices:  []resourcev1.Device{{Name: "gpu-0"}},
		},
	}
}

// wantDenied fails unless err is the policy's denial containing msg.
func wantDenied(t *testing.T, what string, err error, msg string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: allowed, want denied by the node-scoped slice policy", what)
		return
	}
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), msg) {
		t.Errorf("%s: %v; want a denial saying %q", what, err, msg)
	}
}

// TestNodeScopedSlicePolicy installs the chart's plugin RBAC and admission policy into a real apiserver and acts
// as node A's kubelet plugin: node A's slices and clique label may be written, node B's may not.
func TestNodeScopedSlicePolicy(t *testing.T) {
	env, ctx := installPolicies(t, []string{policyNamespace}, "templates/kubelet-plugin-rbac.yaml", "templates/node-scoped-slice-policy.yaml")
	admin, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"node-a", "node-b"} {
		if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"zone": "z1"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// An admin (not the plugin) may write any node's slice: the policy matches the plugin only.
	if _, err := admin.ResourceV1().ResourceSlices().Create(ctx, slice("node-b-gpu", "node-b"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("admin creates node B's slice: %v", err)
	}

	nodeA := pluginClient(t, env.Config, "node-a")
	// The policy takes effect once the apiserver has loaded it: wait for the first denial.
	const sliceMsg = "may write only ResourceSlices whose spec.nodeName is node-a"
	var lastErr error
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, policyLoadTimeout, true, func(ctx context.Context) (bool, error) {
		_, lastErr = nodeA.ResourceV1().ResourceSlices().Create(ctx, slice("forged-b", "node-b"), metav1.CreateOptions{})
		if lastErr == nil {
			return false, admin.ResourceV1().ResourceSlices().Delete(ctx, "forged-b", metav1.DeleteOptions{})
		}
		return strings.Contains(lastErr.Error(), sliceMsg), nil
	}); err != nil {
		t.Fatalf("node A's plugin creating node B's slice was never denied by the policy; last answer: %v", lastErr)
	}

	// Node A's own slice: create, update, delete.
	own, err := nodeA.ResourceV1().ResourceSlices().Create(ctx, slice("node-a-gpu", "node-a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("node A's plugin creates node A's slice: %v", err)
	}
	own.Spec.Devices = append(own.Spec.Devices, resourcev1.Device{Name: "gpu-1"})
	if _, err := nodeA.ResourceV1().ResourceSlices().Update(ctx, own, metav1.UpdateOptions{}); err != nil {
		t.Errorf("node A's plugin updates node A's slice: %v", err)
	}

	// Node B's slice: update, moving it to node A, delete.
	other, err := admin.ResourceV1().ResourceSlices().Get(ctx, "node-b-gpu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other.Spec.Devices = append(other.Spec.Devices, resourcev1.Device{Name: "gpu-9"})
	_, err = nodeA.ResourceV1().ResourceSlices().Update(ctx, other, metav1.UpdateOptions{})
	wantDenied(t, "node A's plugin updates node B's slice", err, sliceMsg)
	err = nodeA.ResourceV1().ResourceSlices().Delete(ctx, "node-b-gpu", metav1.DeleteOptions{})
	wantDenied(t, "node A's plugin deletes node B's slice", err, sliceMsg)
	if err := nodeA.ResourceV1().ResourceSlices().Delete(ctx, "node-a-gpu", metav1.DeleteOptions{}); err != nil {
		t.Errorf("node A's plugin deletes node A's slice: %v", err)
	}
	// Deleting every slice deletes nothing of node B's (its own are gone already).
	err = nodeA.ResourceV1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	wantDenied(t, "node A's plugin deletes every slice", err, sliceMsg)
	if _, err := admin.ResourceV1().ResourceSlices().Get(ctx, "node-b-gpu", metav1.GetOptions{}); err != nil {
		t.Errorf("node B's slice is gone after node A's denied writes: %v", err)
	}

	// Nodes: only its own node's clique label.
	const nodeMsg = "may change only the nvidia.com/gpu.clique label of Node node-a"
	cliquePatch := []byte(`{"metadata":{"labels":{"nvidia.com/gpu.clique":"cluster-a.1"}}}`)
	if _, err := nodeA.CoreV1().Nodes().Patch(ctx, "node-a", types.MergePatchType, cliquePatch, metav1.PatchOptions{}); err != nil {
		t.Errorf("node A's plugin labels node A with its clique: %v", err)
	}
	_, err = nodeA.CoreV1().Nodes().Patch(ctx, "node-b", types.MergePatchType, cliquePatch, metav1.PatchOptions{})
	wantDenied(t, "node A's plugin labels node B", err, nodeMsg)
	_, err = nodeA.CoreV1().Nodes().Patch(ctx, "node-a", types.MergePatchType, []byte(`{"metadata":{"labels":{"zone":"z9"}}}`), metav1.PatchOptions{})
	wantDenied(t, "node A's plugin changes another label of node A", err, nodeMsg)
	_, err = nodeA.CoreV1().Nodes().Patch(ctx, "node-a", types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
	wantDenied(t, "node A's plugin cordons node A", err, nodeMsg)

	// A token that is not bound to a node may write nothing.
	_, err = pluginClient(t, env.Config, "").ResourceV1().ResourceSlices().Create(ctx, slice("unbound", "node-a"), metav1.CreateOptions{})
	wantDenied(t, "the plugin's service account without a node-bound token", err, "token bound to a node")
}
