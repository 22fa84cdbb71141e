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
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

func allocatedOn(node string) *resourcev1.AllocationResult {
	return &resourcev1.AllocationResult{NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
	}}}}
}

func workloadClaim(name string, alloc *resourcev1.AllocationResult, reserved bool) resourcev1.ResourceClaim {
	c := resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"}}
	c.Status.Allocation = alloc
	if reserved {
		c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: name, UID: "pod-" + "name"}}
	}
	return c
}

func TestWorkloadNodes(t *testing.T) {
	networkAttached := &resourcev1.AllocationResult{NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "rack", Operator: corev1.NodeSelectorOpIn, Values: []string{"r1"}}},
	}}}}
	claims := []resourcev1.ResourceClaim{
		workloadClaim("pod-0", allocatedOn("n2"), true),
		workloadClaim("pod-1", allocatedOn("n1"), true),
		workloadClaim("pod-2", allocatedOn("n2"), true),              // a second pod on n2: n2 once
		workloadClaim("pod-3", nil, false),                           // not scheduled yet
		workloadClaim("pod-4", allocatedOn("n3"), false),             // its pod is done: no reservation left
		workloadClaim("pod-5", networkAttached, true),                // no single node: not a node-local device
		workloadClaim("pod-6", &resourcev1.AllocationResult{}, true), // allocated without a node selector
	}
	if diff := cmp.Diff([]string{"n1", "n2"}, WorkloadNodes(claims)); diff != "" {
		t.Errorf("workload nodes (-want +got):\n%s", diff)
	}
	if got := WorkloadNodes(nil); len(got) != 0 {
		t.Errorf("no claims: nodes %v, want none", got)
	}
}

// TestPlaceDaemonsAgainstALaggingCache drives placeDaemons through a DaemonSet's life while the cached
// view lags behind the controller's own writes, as an informer does, and counts the writes: every change
// of the node list costs one write, an unchanged one none, and a DaemonSet the controller deleted is
// never patched.
func TestPlaceDaemonsAgainstALaggingCache(t *testing.T) {
	ctx := context.Background()
	scheme := testScheme(t)
	// The fake client does not keep generations; the interceptor bumps them as the API server does.
	var writes []string
	server := fake.NewClientBuilder().WithScheme(scheme).Build()
	live := interceptor.NewClient(server, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			writes = append(writes, "create")
			obj.SetGeneration(1)
			return c.Create(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			writes = append(writes, "patch")
			if err := c.Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			obj.SetGeneration(obj.GetGeneration() + 1)
			return c.Update(ctx, obj)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			writes = append(writes, "delete")
			return c.Delete(ctx, obj, opts...)
		},
	})
	// cached is what the informer shows: set by the test, nil for "not seen".
	var cached *appsv1.DaemonSet
	lagging := interceptor.NewClient(live, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			ds, ok := obj.(*appsv1.DaemonSet)
			if !ok {
				return c.Get(ctx, key, obj, opts...)
			}
			if cached == nil {
				return apierrors.NewNotFound(appsv1.Resource("daemonsets"), key.Name)
			}
			cached.DeepCopyInto(ds)
			return nil
		},
	})
	r := newTestReconciler(t, lagging, live)
	cd := utiltesting.MakeComputeDomain("job", "team-a").UID(testUID).Obj()
	key := client.ObjectKey{Namespace: testOperatorNS, Name: DaemonSetName(cd.UID)}
	serverState := func() *appsv1.DaemonSet {
		ds := &appsv1.DaemonSet{}
		if err := server.Get(ctx, key, ds); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			t.Fatal(err)
		}
		return ds
	}
	nodesOf := func(ds *appsv1.DaemonSet) []string {
		var out []string
		for _, term := range ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			out = append(out, term.MatchFields[0].Values[0])
		}
		return out
	}
	steps := []struct {
		name    string
		nodes   []string
		catchUp bool // the cache shows the server's state before this step
		// deleteBehind: someone deletes the DaemonSet on the server before this step, unseen by the cache.
		deleteBehind bool
		wantErr      bool
		wantWrites   []string
		wantNodes    []string // on the server after the step; nil: no DaemonSet
	}{
		{name: "first pod bound: create", nodes: []string{"n1"}, wantWrites: []string{"create"}, wantNodes: []string{"n1"}},
		{name: "same nodes, cache has not seen the create", nodes: []string{"n1"}, wantNodes: []string{"n1"}},
		{name: "a node joins before the cache saw the create", nodes: []string{"n1", "n2"}, wantWrites: []string{"patch"}, wantNodes: []string{"n1", "n2"}},
		{name: "cache shows the create only: the last write stands", nodes: []string{"n1", "n2"}, wantNodes: []string{"n1", "n2"}},
		{name: "cache caught up", nodes: []string{"n1", "n2"}, catchUp: true, wantNodes: []string{"n1", "n2"}},
		{name: "a node leaves", nodes: []string{"n2"}, wantWrites: []string{"patch"}, wantNodes: []string{"n2"}},
		{name: "the last node leaves: delete", nodes: nil, catchUp: true, wantWrites: []string{"delete"}},
		{name: "still no node, cache still shows the DaemonSet", nodes: nil},
		{name: "a new pod, cache still shows the deleted DaemonSet: create anew", nodes: []string{"n3"}, wantWrites: []string{"create"}, wantNodes: []string{"n3"}},
		{name: "deleted behind our back, unseen: the patch fails", nodes: []string{"n3", "n4"}, deleteBehind: true, wantWrites: []string{"patch"}, wantErr: true},
		{name: "the retry creates it anew", nodes: []string{"n3", "n4"}, wantWrites: []string{"create"}, wantNodes: []string{"n3", "n4"}},
	}
	for i, step := range steps {
		writes = nil
		switch {
		case step.catchUp:
			cached = serverState()
		case i == 3:
			// The cache has seen the create (generation 1) but not the patch.
			cached = serverState()
			cached.Generation = 1
			cached.Spec.Template.Spec.Affinity.NodeAffinity = onNodes([]string{"n1"})
		}
		if step.deleteBehind {
			if err := server.Delete(ctx, serverState()); err != nil {
				t.Fatal(err)
			}
			cached = nil
		}
		if err := r.placeDaemons(ctx, cd, step.nodes); (err != nil) != step.wantErr {
			t.Fatalf("step %q: error %v, want one: %v", step.name, err, step.wantErr)
		}
		if diff := cmp.Diff(step.wantWrites, writes); diff != "" {
			t.Errorf("step %q: writes (-want +got):\n%s", step.name, diff)
		}
		got := serverState()
		switch {
		case step.wantNodes == nil && got != nil:
			t.Errorf("step %q: DaemonSet on the server selects %v, want none", step.name, nodesOf(got))
		case step.wantNodes != nil && got == nil:
			t.Errorf("step %q: no DaemonSet on the server, want one on %v", step.name, step.wantNodes)
		case got != nil:
			if diff := cmp.Diff(step.wantNodes, nodesOf(got)); diff != "" {
				t.Errorf("step %q: nodes on the server (-want +got):\n%s", step.name, diff)
			}
		}
	}
}
