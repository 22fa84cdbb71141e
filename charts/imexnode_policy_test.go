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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
)

// cliqueDaemonUser is the long-lived IMEX daemons' service account as the chart names it.
const cliqueDaemonUser = "system:serviceaccount:" + policyNamespace + ":compute-domain-imex-daemon"

func imexNode(name, node string) *v1beta1.IMEXNode {
	return &v1beta1.IMEXNode{
		ObjectMeta: metav1.ObjectMeta{Namespace: policyNamespace, Name: name},
		Spec:       v1beta1.IMEXNodeSpec{NodeName: node, CliqueID: "cluster-a.1", IPAddress: "10.0.0.1"},
	}
}

// TestIMEXNodePolicy: with the chart's RBAC and policy, the daemon on node A writes node A's IMEXNode and its status, never node B's, nor
// one named for node B, nor one without a node-bound token.
func TestIMEXNodePolicy(t *testing.T) {
	env, ctx := installPolicies(t, []string{policyNamespace}, "templates/compute-domain-imex-daemonset.yaml", "templates/imexnode-policy.yaml")
	scheme, err := kubescheme.New()
	if err != nil {
		t.Fatal(err)
	}
	daemonOn := func(node string) client.Client {
		c, err := client.New(asServiceAccount(env.Config, cliqueDaemonUser, node), client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	nodeA := daemonOn("node-a")
	const msg = "may write only the IMEXNode node-a"
	var lastErr error
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, policyLoadTimeout, true, func(ctx context.Context) (bool, error) {
		forged := imexNode("node-b", "node-b")
		lastErr = nodeA.Create(ctx, forged)
		if lastErr == nil {
			return false, env.Client.Delete(ctx, forged)
		}
		return strings.Contains(lastErr.Error(), msg), nil
	}); err != nil {
		t.Fatalf("the daemon on node A creating node B's IMEXNode was never denied; last answer: %v", lastErr)
	}
	own := imexNode("node-a", "node-a")
	if err := nodeA.Create(ctx, own); err != nil {
		t.Fatalf("the daemon on node A writes its own IMEXNode: %v", err)
	}
	own.Status.Ready = true
	if err := nodeA.Status().Update(ctx, own); err != nil {
		t.Errorf("the daemon on node A reports its own status: %v", err)
	}
	other := imexNode("node-b", "node-b")
	if err := daemonOn("node-b").Create(ctx, other); err != nil {
		t.Fatalf("the daemon on node B writes its own IMEXNode: %v", err)
	}
	forged := other.DeepCopy()
	forged.Spec.IPAddress = "10.6.6.6"
	wantDenied(t, "the daemon on node A replaces node B's address", nodeA.Update(ctx, forged), msg)
	forged = other.DeepCopy()
	forged.Status.Ready = true
	wantDenied(t, "the daemon on node A marks node B ready", nodeA.Status().Update(ctx, forged), msg)
	wantDenied(t, "the daemon on node A creates its record under node C's name", nodeA.Create(ctx, imexNode("node-c", "node-a")), msg)
	// The member-record policy of the per-domain mode matched by name prefix (gpu-a could write gpu-a-b's).
	wantDenied(t, "the daemon on node A writes the IMEXNode of node A-B, whose name starts with node A's", nodeA.Create(ctx, imexNode("node-a-b", "node-a-b")), msg)
	// The per-domain mode hashed names over 216 characters, which the policy then refused; an IMEXNode is named
	// after its node, whatever the length.
	long := "node-" + strings.Repeat("l", 240)
	if err := daemonOn(long).Create(ctx, imexNode(long, long)); err != nil {
		t.Errorf("the daemon on a node with a 245-character name writes its own IMEXNode: %v", err)
	}
	wantDenied(t, "the long-lived daemons' service account without a node-bound token", daemonOn("").Create(ctx, imexNode("node-a2", "node-a2")), "token bound to a node")
}
