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

package cliqueplacement

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/status"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

func TestVerdictsAnswerOnlyForTheSameDomainObjectAndSize(t *testing.T) {
	ctx := context.Background()
	v := NewVerdicts()
	cd := utiltesting.MakeComputeDomain("job", "team-a").UID("uid-1").NumNodes(4).Obj()
	p := status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonWaitingForPods, Message: "3 of 4"}
	if _, ok := v.Placement(cd); ok {
		t.Fatal("a verdict before the fallback looked at the domain")
	}
	v.set(ctx, cd, p)
	if got, ok := v.Placement(cd); !ok || got != p {
		t.Errorf("Placement = %+v, %v; want %+v", got, ok, p)
	}
	recreated := utiltesting.MakeComputeDomain("job", "team-a").UID("uid-2").NumNodes(4).Obj()
	if _, ok := v.Placement(recreated); ok {
		t.Error("a domain recreated under the same name got the old object's verdict")
	}
	resized := utiltesting.MakeComputeDomain("job", "team-a").UID("uid-1").NumNodes(8).Obj()
	if _, ok := v.Placement(resized); ok {
		t.Error("a domain whose spec.numNodes changed got the verdict of its old size")
	}
	v.forget(types.NamespacedName{Namespace: "team-a", Name: "job"})
	if _, ok := v.Placement(cd); ok {
		t.Error("a forgotten verdict is still answered")
	}
}

func TestVerdictsTellTheWatcherOnlyOfChanges(t *testing.T) {
	ctx := context.Background()
	v := NewVerdicts()
	cd := utiltesting.MakeComputeDomain("job", "team-a").UID("uid-1").NumNodes(4).Obj()
	waiting := status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonWaitingForPods, Message: "3 of 4"}
	v.set(ctx, cd, waiting)
	v.set(ctx, cd, waiting)
	v.set(ctx, cd, status.Placement{Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonCliqueAffinity, Message: "clique b"})
	var got []string
	for len(v.Changes()) > 0 {
		ev := <-v.Changes()
		got = append(got, ev.Object.GetNamespace()+"/"+ev.Object.GetName())
	}
	if len(got) != 2 || got[0] != "team-a/job" || got[1] != "team-a/job" {
		t.Errorf("changes told %v, want team-a/job twice (the repeat is not a change)", got)
	}
}

// The fallback's Reconcile records its verdict, and drops it when the domain goes.
func TestReconcileRecordsTheVerdictAndForgetsAGoneDomain(t *testing.T) {
	f := newPlacementFixture(t, map[string]int{})
	ctx := context.Background()
	if err := f.c.Create(ctx, f.domain); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"p0", "p1", "p2", "p3"} {
		f.pod(name, "")
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: f.domain.Namespace, Name: f.domain.Name}}
	if _, err := f.r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	// The fake client stamps its own UID on create.
	got, ok := f.r.verdicts.Placement(f.domain)
	if !ok || got.Reason != v1beta1.ComputeDomainReasonCliqueAffinity {
		t.Fatalf("verdict %+v (%v), want CliqueAffinity", got, ok)
	}
	if len(f.r.verdicts.Changes()) != 1 {
		t.Errorf("%d changes told, want 1", len(f.r.verdicts.Changes()))
	}
	if err := f.c.Delete(ctx, f.domain); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.r.verdicts.Placement(f.domain); ok {
		t.Error("the verdict on a deleted domain stays")
	}
}
