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

package finalizer

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

type releases []types.UID

func (r *releases) Release(uid types.UID) { *r = append(*r, uid) }

func scheme(t *testing.T) *runtime.Scheme {
	s, err := kubescheme.New()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCleanupRun: a deleted domain with no workload claim left releases its channel and loses our finalizer
// only; a teardown that half ran before runs again without error.
func TestCleanupRun(t *testing.T) {
	now := metav1.Now()
	doomed := utiltesting.MakeComputeDomain("job", "team-a").UID("uid-doomed").Obj()
	doomed.Finalizers = []string{Name, "example.com/other"}
	doomed.DeletionTimestamp = &now
	for _, runs := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d runs", runs), func(t *testing.T) {
			ctx := context.Background()
			c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(doomed.DeepCopy()).Build()
			var released releases
			for range runs {
				cd := &v1beta1.ComputeDomain{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(doomed), cd); err != nil {
					t.Fatal(err)
				}
				if err := (Cleanup{Client: c, Channels: &released}).Run(ctx, cd); err != nil {
					t.Fatalf("run: %v", err)
				}
			}
			if diff := cmp.Diff(releases{"uid-doomed"}, released); diff != "" {
				t.Errorf("channel releases (-want +got):\n%s", diff)
			}
			got := &v1beta1.ComputeDomain{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(doomed), got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"example.com/other"}, got.Finalizers, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("finalizers (-want +got): only ours goes\n%s", diff)
			}
		})
	}
}

// TestCleanupKeepsAHeldChannel: while a workload claim of the deleted domain is reserved for a pod, its
// channel is not released and the finalizer stays; claims that are allocated but no longer reserved, or of
// another domain, do not hold it.
func TestCleanupKeepsAHeldChannel(t *testing.T) {
	ctx := context.Background()
	now := metav1.Now()
	doomed := utiltesting.MakeComputeDomain("job", "team-a").UID("uid-doomed").Obj()
	doomed.Finalizers = []string{Name}
	doomed.DeletionTimestamp = &now
	claim := func(name, domainUID string, reserved bool) *resourcev1.ResourceClaim {
		c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name,
			Labels: map[string]string{v1beta1.WorkloadClaimLabelKey: domainUID}}}
		c.Status.Allocation = &resourcev1.AllocationResult{}
		if reserved {
			c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: name, UID: "pod-uid"}}
		}
		return c
	}
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithStatusSubresource(&resourcev1.ResourceClaim{}).
		WithObjects(doomed.DeepCopy(), claim("pod-0-channel", "uid-doomed", true), claim("pod-1-channel", "uid-doomed", false),
			claim("other-channel", "uid-other", true)).Build()
	var released releases
	cleanup := Cleanup{Client: c, Channels: &released}
	cd := &v1beta1.ComputeDomain{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(doomed), cd); err != nil {
		t.Fatal(err)
	}
	err := cleanup.Run(ctx, cd)
	var held *ChannelsHeldError
	if !errors.As(err, &held) || !cmp.Equal(held.Claims, []string{"pod-0-channel"}) {
		t.Fatalf("run with a reserved workload claim: %v; want a ChannelsHeldError naming pod-0-channel", err)
	}
	if len(released) > 0 {
		t.Errorf("channel released while pod-0-channel is reserved: %v", released)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(doomed), cd); err != nil || !cmp.Equal(cd.Finalizers, []string{Name}) {
		t.Errorf("finalizer gone while the channel is held: %v, %v", cd.Finalizers, err)
	}
}

func TestEnsure(t *testing.T) {
	ctx := context.Background()
	cd := utiltesting.MakeComputeDomain("job", "team-a").UID("uid").Obj()
	patches := 0
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(cd).Build(), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patches++
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	got := &v1beta1.ComputeDomain{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cd), got); err != nil {
		t.Fatal(err)
	}
	// The first call adds the finalizer; the second finds it and writes nothing.
	for i, wantPatches := range []int{1, 1} {
		if err := Ensure(ctx, c, got); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if patches != wantPatches {
			t.Errorf("call %d: %d patches so far, want %d", i, patches, wantPatches)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cd), got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{Name}, got.Finalizers); diff != "" {
		t.Errorf("finalizers (-want +got):\n%s", diff)
	}
}

func TestCleanupNeverDropsAFinalizerItDidNotSee(t *testing.T) {
	ctx := context.Background()
	now := metav1.Now()
	cd := utiltesting.MakeComputeDomain("job", "team-a").UID("uid").Obj()
	cd.Finalizers = []string{Name, "example.com/late"}
	cd.DeletionTimestamp = &now
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(cd).Build()

	// The controller's view predates the other finalizer.
	stale := &v1beta1.ComputeDomain{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cd), stale); err != nil {
		t.Fatal(err)
	}
	stale.Finalizers = []string{Name}
	var released releases
	cleanup := Cleanup{Client: c, Channels: &released}
	if err := cleanup.Run(ctx, stale); err == nil {
		t.Fatal("removing the finalizer from a stale list succeeded")
	}
	got := &v1beta1.ComputeDomain{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cd), got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{Name, "example.com/late"}, got.Finalizers); diff != "" {
		t.Errorf("finalizers after the refused patch (-want +got):\n%s", diff)
	}

	// The next pass reads the current list and removes only its own.
	if err := cleanup.Run(ctx, got); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cd), got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"example.com/late"}, got.Finalizers); diff != "" {
		t.Errorf("finalizers (-want +got):\n%s", diff)
	}
}
