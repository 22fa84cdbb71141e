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

package computedomain

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/imexclique"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

// TestIndicesSurviveALaggingCache reconciles against a client whose reads of the domain never show the
// controller's own status writes, as an informer cache does for a while after each write. The nodes' daemons
// report, but their clique's ensemble does not list them yet, so their indices come from the domain's
// previous status: they must stay where the controller first put them.
func TestIndicesSurviveALaggingCache(t *testing.T) {
	ctx := context.Background()
	scheme := testScheme(t)
	cd := utiltesting.MakeComputeDomain("job", "team-a").UID(testUID).Obj()
	stale := cd.DeepCopy()
	claimOn := func(node string) *resourcev1.ResourceClaim {
		c := workloadClaim("worker-"+node, allocatedOn(node), true)
		c.Labels = map[string]string{v1beta1.WorkloadClaimLabelKey: testUID}
		return &c
	}
	base := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(cd, claimOn("n2"),
			utiltesting.MakeIMEXNode("n2", testOperatorNS).Clique("c.1").IP("10.0.0.2").OwnedBy("imex-n2", "pod-n2").Ready().Obj(),
			daemonPod("n2", "10.0.0.2"), daemonPod("n1", "10.0.0.1")).
		WithStatusSubresource(&v1beta1.ComputeDomain{}).Build()
	lagging := interceptor.NewClient(base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if got, ok := obj.(*v1beta1.ComputeDomain); ok {
				got.Status = stale.Status // the cache has not seen any status write yet
			}
			return nil
		},
	})
	r := newTestReconciler(t, lagging, base)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "job"}}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatalf("first reconcile: %v", err)
	}
	// n1 joins after n2 and sorts before it: it must take the next free index, not n2's.
	for _, o := range []client.Object{claimOn("n1"), utiltesting.MakeIMEXNode("n1", testOperatorNS).Clique("c.1").IP("10.0.0.1").OwnedBy("imex-n1", "pod-n1").Ready().Obj()} {
		if err := base.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatalf("second reconcile: %v", err)
	}
	got := &v1beta1.ComputeDomain{}
	if err := base.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	indices := map[string]int32{}
	for _, n := range got.Status.Nodes {
		indices[n.Name] = n.Index
	}
	if diff := cmp.Diff(map[string]int32{"n2": 0, "n1": 1}, indices); diff != "" {
		t.Errorf("indices (-want +got):\n%s", diff)
	}
}

// daemonPod is the long-lived IMEX daemon pod on a node, running at ip, as the DaemonSet controller and the
// kubelet would leave it: what makes the node's IMEXNode count (imexclique.TrustNodes).
func daemonPod(node, ip string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: testOperatorNS,
			Name:      "imex-" + node,
			UID:       types.UID("pod-" + node),
			Labels:    map[string]string{imexclique.AppLabelKey: imexclique.AppLabelValue, imexclique.ComponentLabelKey: imexclique.ComponentLabelValue},
		},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{PodIP: ip},
	}
}
