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

package daemon

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	cdtest "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

func TestDomainWatchFollowsTheDomain(t *testing.T) {
	c := newFakeClient(t)
	key := client.ObjectKey{Namespace: "team-a", Name: "train"}
	w := NewDomainWatch(c, key, "u1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.Run(ctx)

	waitForWatch := func(what string, cond func(*v1beta1.ComputeDomain) bool) {
		t.Helper()
		deadline := time.Now().Add(eventually)
		for {
			cd, _ := w.Get(ctx)
			if w.Synced() && cond(cd) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for the watch to see %s; have %+v", what, cd)
			}
			select {
			case <-w.Changed():
			case <-time.After(poll):
			}
		}
	}
	waitForWatch("no domain yet", func(cd *v1beta1.ComputeDomain) bool { return cd == nil })

	cd := cdtest.MakeComputeDomain("train", "team-a").UID("u1").Obj()
	other := cdtest.MakeComputeDomain("other", "team-a").UID("u2").Obj()
	for _, o := range []client.Object{cd, other} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	waitForWatch("the domain created", func(got *v1beta1.ComputeDomain) bool { return got != nil && got.UID == "u1" })

	cd.Status.Status = v1beta1.ComputeDomainStatusReady
	if err := c.Status().Update(ctx, cd); err != nil {
		t.Fatal(err)
	}
	waitForWatch("the status change", func(got *v1beta1.ComputeDomain) bool {
		return got != nil && got.Status.Status == v1beta1.ComputeDomainStatusReady
	})

	if err := c.Delete(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, cd); err != nil {
		t.Fatal(err)
	}
	waitForWatch("the domain deleted", func(got *v1beta1.ComputeDomain) bool { return got == nil })

	// A new domain of the same name is another domain: this daemon's stays gone.
	again := cdtest.MakeComputeDomain("train", "team-a").UID("u3").Obj()
	if err := c.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	again.Status.Status = v1beta1.ComputeDomainStatusReady
	if err := c.Status().Update(ctx, again); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * poll)
	if got, _ := w.Get(ctx); got != nil {
		t.Errorf("the watch of domain u1 took the recreated domain of the same name (UID %s) for its own", got.UID)
	}
}
