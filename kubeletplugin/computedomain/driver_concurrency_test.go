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
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// existingClaims is the API's ResourceClaims as the stale-claim sweep reads
// them.
type existingClaims struct {
	mu     sync.Mutex
	claims map[string]*resourceapi.ResourceClaim
}

func (c *existingClaims) GetResourceClaim(_ context.Context, ns, name string) (*resourceapi.ResourceClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.claims[ns+"/"+name]; ok {
		return cl, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaims"}, name)
}

// TestConcurrentCallsKeepTheNodeStateWhole: the helper does not serialize
// this plugin's calls, so prepares (some waiting for their domain, some of
// several claims), unprepares, the stale-claim sweep and domain changes run
// side by side. Run with -race. Afterwards every claim of a domain that was or
// became Ready was prepared with its own domain's channel in one call, the
// broken domain's claims got the retryable error, and unprepare left neither a
// checkpointed claim nor a CDI spec behind.
func TestConcurrentCallsKeepTheNodeStateWhole(t *testing.T) {
	const readyWait = 2 * time.Second
	e := newNodeEnv(t, "gb200-nvl72")
	uidC := types.UID("cccccccc-0000-0000-0000-00000000000c")
	channels := map[types.UID]int32{uidA: 3, uidB: 4, uidC: 5}
	e.domains.set(domain("a", "team-a", uidA, e.clique, ptr.To[int32](3), testNode)) // Ready
	e.domains.set(domain("b", "team-b", uidB, e.clique, ptr.To[int32](4)))           // becomes Ready
	e.domains.set(domain("c", "team-c", uidC, e.clique, ptr.To[int32](5)))           // never lists the node
	d := e.driverWaiting(readyWait)
	api := &existingClaims{claims: map[string]*resourceapi.ResourceClaim{}}

	type job struct {
		claims []*resourceapi.ResourceClaim
		domain []types.UID
	}
	var jobs []job
	for i := range 12 {
		uid := []types.UID{uidA, uidB, uidC}[i%3]
		ns := map[types.UID]string{uidA: "team-a", uidB: "team-b", uidC: "team-c"}[uid]
		j := job{claims: []*resourceapi.ResourceClaim{channelClaim(fmt.Sprintf("w%d", i), ns, types.UID(fmt.Sprintf("claim-%d", i)), i, uid, "")}, domain: []types.UID{uid}}
		if i%4 == 0 { // a pod with a second claim, of domain a
			j.claims = append(j.claims, channelClaim(fmt.Sprintf("x%d", i), "team-a", types.UID(fmt.Sprintf("claim-x%d", i)), 16+i, uidA, ""))
			j.domain = append(j.domain, uidA)
		}
		for _, c := range j.claims {
			api.claims[c.Namespace+"/"+c.Name] = c
		}
		jobs = append(jobs, j)
	}

	ctx, cancel := context.WithCancel(e.ctx())
	defer cancel()
	var background sync.WaitGroup
	background.Go(func() { // the sweep, as Run does it, much more often
		for ctx.Err() == nil {
			if err := d.state.UnprepareStale(ctx, api); err != nil && ctx.Err() == nil {
				t.Errorf("stale-claim sweep: %v", err)
			}
			time.Sleep(time.Millisecond)
		}
	})
	background.Go(func() { // status writes of the three domains; b lists the node after 200 ms
		start := time.Now()
		for ctx.Err() == nil {
			e.domains.set(domain("a", "team-a", uidA, e.clique, ptr.To[int32](3), testNode))
			if time.Since(start) > 200*time.Millisecond {
				e.domains.set(domain("b", "team-b", uidB, e.clique, ptr.To[int32](4), testNode))
			}
			e.domains.set(domain("c", "team-c", uidC, e.clique, ptr.To[int32](5), "other-node"))
			time.Sleep(5 * time.Millisecond)
		}
	})

	var pods sync.WaitGroup
	for _, j := range jobs {
		pods.Go(func() {
			res, err := d.PrepareResourceClaims(ctx, j.claims)
			if err != nil {
				t.Errorf("prepare: %v", err)
				return
			}
			for i, c := range j.claims {
				r := res[c.UID]
				switch {
				case j.domain[i] == uidC && !errors.Is(r.Err, ErrWaitingForDomain):
					t.Errorf("claim %s of the broken domain: %v, want ErrWaitingForDomain", c.UID, r.Err)
				case j.domain[i] != uidC && r.Err != nil:
					t.Errorf("claim %s of domain %s: %v", c.UID, j.domain[i], r.Err)
				case j.domain[i] != uidC:
					want := fmt.Sprintf("/dev/nvidia-caps-imex-channels/channel%d", channels[j.domain[i]])
					if got := view(t, e, r).DeviceNodes; len(got) != 1 || got[0] != want {
						t.Errorf("claim %s of domain %s sees %v, want %s", c.UID, j.domain[i], got, want)
					}
				}
			}
			uids := make([]types.UID, 0, len(j.claims))
			for _, c := range j.claims {
				uids = append(uids, c.UID)
			}
			for uid, err := range d.state.Unprepare(ctx, uids) {
				if err != nil {
					t.Errorf("unprepare %s: %v", uid, err)
				}
			}
		})
	}
	pods.Wait()
	cancel()
	background.Wait()

	if left := d.state.ledger.Claims(); len(left) != 0 {
		t.Errorf("checkpointed claims left after unprepare: %v", left)
	}
	if specs, err := d.state.cdi.ClaimUIDs(); err != nil || len(specs) != 0 {
		t.Errorf("CDI specs left after unprepare: %v %v", specs, err)
	}
}
