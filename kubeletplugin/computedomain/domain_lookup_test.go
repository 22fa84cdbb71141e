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
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
	cdtest "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

// A node's plugin watches the domains of a namespace only while it prepares claims there: a lookup starts the
// namespace's informer, a change of a domain there wakes its waiters, and the informer stops once nothing holds
// it and no lookup has come for the grace time (a later lookup starts it again, with the current state).
func TestWatchedDomainsWatchOnlyWhilePreparesUseThem(t *testing.T) {
	scheme, err := kubescheme.New()
	if err != nil {
		t.Fatal(err)
	}
	a := cdtest.MakeComputeDomain("a", "team-a").UID(uidA).Obj()
	b := cdtest.MakeComputeDomain("b", "team-b").UID(uidB).Obj()
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(a, b).WithStatusSubresource(a).Build()
	clk := testingclock.NewFakeClock(time.Now())
	const grace = 10 * time.Second
	w := NewWatchedDomains(listThenWatch{c}, grace, clk)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runCtx, stopRun := context.WithCancel(ctx)
	go w.Run(runCtx)
	watching := func(want ...string) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			return slices.Equal(w.Watching(), want), nil
		}); err != nil {
			t.Fatalf("watching %q, want %q", w.Watching(), want)
		}
	}
	watching()

	got, err := w.DomainByUID(ctx, "team-a", uidA)
	if err != nil || got == nil || got.Name != "a" {
		t.Fatalf("domain a in team-a: %v, %v", got, err)
	}
	if got, err := w.DomainByUID(ctx, "team-a", uidB); err != nil || got != nil {
		t.Fatalf("domain b looked up in team-a: %v, %v; want none (it is in team-b)", got, err)
	}
	watching("team-a")

	changed := w.Changed(uidA)
	got.Status.Status = apiv1beta1.ComputeDomainStatusReady
	if err := c.Status().Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("the status write of domain a did not wake its waiters")
	}
	if got, _ := w.DomainByUID(ctx, "team-a", uidA); got == nil || got.Status.Status != apiv1beta1.ComputeDomainStatusReady {
		t.Fatalf("after the wake: %v, want the written status", got)
	}

	// Held (a prepare waiting) for longer than the grace time: kept. Released and unused for the grace time:
	// stopped.
	step := func(d time.Duration) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			return clk.HasWaiters(), nil
		}); err != nil {
			t.Fatal("Run's ticker never waited")
		}
		clk.Step(d)
	}
	release, err := w.Hold(ctx, "team-a")
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		step(grace / 2)
	}
	watching("team-a")
	release()
	release() // a second release changes nothing
	step(grace / 2)
	watching("team-a")
	step(grace / 2)
	step(grace / 2)
	watching()

	// Holding a namespace nothing looked up yet starts its informer and returns once it has listed.
	if release, err = w.Hold(ctx, "team-b"); err != nil {
		t.Fatal(err)
	}
	watching("team-b")
	release()
	step(grace / 2)
	step(grace / 2)
	step(grace / 2)
	watching()

	// A daemon claim's domain is looked up in every namespace.
	if got, err := w.DomainByUID(ctx, "", uidB); err != nil || got == nil || got.Name != "b" {
		t.Fatalf("domain b in any namespace: %v, %v", got, err)
	}
	watching("")

	// Run's end stops every informer.
	stopRun()
	watching()
}

// listThenWatch is a fake client that tells informers to list, then watch: it serves no streaming lists.
type listThenWatch struct{ client.WithWatch }

func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }
