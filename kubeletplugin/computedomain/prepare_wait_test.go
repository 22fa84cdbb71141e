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
	"errors"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/utils/ptr"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/status"
	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	cdtest "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

// TestAChannelClaimIsPreparedByTheCallDuringWhichItsNodeJoins: the kubelet
// retries a failed prepare only at its next pod sync, 60-90 s later, so a pod
// of a healthy forming domain must be prepared by its first call. Here the
// controller lists the node 5 s after the call started (the default wait is
// 30 s): the one call succeeds, and it returns as soon as the domain's status
// reaches the cache, not at a poll.
func TestAChannelClaimIsPreparedByTheCallDuringWhichItsNodeJoins(t *testing.T) {
	const joinsAfter = 5 * time.Second
	e := newNodeEnv(t, "gb200-nvl72")
	e.domains.set(domain("a", "team-a", uidA, e.clique, ptr.To[int32](4)))
	d := e.driverWaiting(0) // the default wait
	if d.cfg.ReadyWait != DefaultReadyWait {
		t.Fatalf("ready wait %s, want the default %s", d.cfg.ReadyWait, DefaultReadyWait)
	}

	done := make(chan kubeletplugin.PrepareResult, 1)
	start := time.Now()
	go func() { done <- prepare(t, d, channelClaim("w", "team-a", "claim-1", 0, uidA, "")) }()
	var joined time.Time
	select {
	case res := <-done:
		t.Fatalf("the call returned after %s, before the node joined the domain: %v", time.Since(start), res.Err)
	case <-time.After(joinsAfter):
		// The waiting call keeps its namespace's domains watched (WatchedDomains stops an unheld watch).
		if n := e.domains.holds("team-a"); n != 1 {
			t.Errorf("the waiting call holds namespace team-a %d times, want once", n)
		}
		joined = time.Now()
		e.domains.set(domain("a", "team-a", uidA, e.clique, ptr.To[int32](4), testNode))
	}
	select {
	case res := <-done:
		if res.Err != nil {
			t.Fatalf("the call during which the node joined: %v", res.Err)
		}
		if n := e.domains.holds("team-a"); n != 0 {
			t.Errorf("after the call namespace team-a is held %d times, want released", n)
		}
		if took := time.Since(joined); took > time.Second {
			t.Errorf("the call returned %s after the node joined: it should wake on the domain's change", took)
		}
		if diff := view(t, e, res).DeviceNodes; len(diff) != 1 || diff[0] != "/dev/nvidia-caps-imex-channels/channel4" {
			t.Errorf("container devices %v, want the domain's channel4", diff)
		}
	case <-time.After(DefaultReadyWait):
		t.Fatal("the call did not return after the node joined")
	}
}

// TestABrokenDomainFailsAfterTheWaitNamingTheCause: when the node's place in
// the domain does not come within the wait, the retryable error says what the
// claim waited for and what the domain's status (as the controller computes
// it) shows instead.
func TestABrokenDomainFailsAfterTheWaitNamingTheCause(t *testing.T) {
	const readyWait = 300 * time.Millisecond
	now := metav1.Now()
	// computed is the domain's status as the controller computes it from the
	// nodes of its workload claims.
	computed := func(clique string, in status.Input) *apiv1beta1.ComputeDomain {
		cd := cdtest.MakeComputeDomain("a", "team-a").UID(uidA).Obj()
		in.Domain, in.Now = cd, now
		cd.Status = status.Compute(in)
		return cd
	}
	imexNode := func(clique string) *apiv1beta1.IMEXNode {
		return cdtest.MakeIMEXNode(testNode, "nvidia-dra").IP("10.0.0.1").Clique(clique).Ready().Obj()
	}
	cases := map[string]struct {
		domain  func(clique string) *apiv1beta1.ComputeDomain
		wantErr []string
		// notRecorded: the claim is not checkpointed (nothing was done for
		// it); else it is, PrepareStarted, for unprepare to find.
		notRecorded bool
	}{
		"no IMEX daemon reports for the node": {
			domain: func(c string) *apiv1beta1.ComputeDomain {
				return computed(c, status.Input{Nodes: []status.Node{{Name: testNode}}})
			},
			wantErr: []string{`its status lists node node-1 NotReady in clique ""`, "IMEXReady=False NoIMEXDaemon: no long-lived IMEX daemon reports for node node-1"},
		},
		"the node's daemon is not ready": {
			domain: func(c string) *apiv1beta1.ComputeDomain {
				n := cdtest.MakeIMEXNode(testNode, "nvidia-dra").IP("10.0.0.1").Clique(c).NotReady(apiv1beta1.IMEXNodeConditionIMEXReady, "IMEXNotAnswering", "nvidia-imex-ctl -q printed nothing").Obj()
				return computed(c, status.Input{Nodes: []status.Node{{Name: testNode, IMEX: n, Index: ptr.To[int32](0)}}, Channels: map[string]int32{c: 4}})
			},
			wantErr: []string{"IMEXReady=False IMEXNotAnswering: nvidia-imex-ctl -q printed nothing"},
		},
		"the controller has not listed the node": {
			domain:  func(c string) *apiv1beta1.ComputeDomain { return computed(c, status.Input{}) },
			wantErr: []string{"its status does not list node node-1", "Ready=False NoWorkload"},
		},
		"the domain's status puts the node in another clique": {
			domain: func(c string) *apiv1beta1.ComputeDomain {
				return computed(c, status.Input{Nodes: []status.Node{{Name: testNode, IMEX: imexNode("other.1"), Index: ptr.To[int32](0)}}, Channels: map[string]int32{"other.1": 4}})
			},
			wantErr: []string{`its status lists node node-1 Ready in clique "other.1", but this node's GPUs are in NVLink clique`},
		},
		"the clique's channels are exhausted": {
			domain: func(c string) *apiv1beta1.ComputeDomain {
				return computed(c, status.Input{Nodes: []status.Node{{Name: testNode, IMEX: imexNode(c), Index: ptr.To[int32](0)}},
					ChannelErrors: map[string]error{c: errors.New("all 2047 channels are held")}})
			},
			wantErr: []string{"its status gives clique", "no IMEX channel", "ChannelsExhausted", "all 2047 channels are held"},
		},
		"no such domain": {
			wantErr:     []string{"for a ComputeDomain with UID " + string(uidA) + " in namespace team-a: there is none (not created yet, or deleted"},
			notRecorded: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newNodeEnv(t, "gb200-nvl72")
			if tc.domain != nil {
				e.domains.set(tc.domain(e.clique))
			}
			d := e.driverWaiting(readyWait)
			start := time.Now()
			res := prepare(t, d, channelClaim("w", "team-a", "claim-1", 0, uidA, ""))
			took := time.Since(start)
			if !errors.Is(res.Err, ErrWaitingForDomain) {
				t.Fatalf("prepare error = %v, want ErrWaitingForDomain", res.Err)
			}
			want := append([]string{"prepare claim team-a/w: waiting for the ComputeDomain: waited 300ms for "}, tc.wantErr...)
			for _, w := range want {
				if !strings.Contains(res.Err.Error(), w) {
					t.Errorf("prepare error\n  %v\ndoes not say %q", res.Err, w)
				}
			}
			if took < readyWait {
				t.Errorf("the call returned after %s, before its wait of %s", took, readyWait)
			}
			t.Log(res.Err)
			wantStatus := checkpoint.PrepareStarted
			if tc.notRecorded {
				wantStatus = ""
			}
			if got := d.state.ledger.Claims()["claim-1"].Status; got != wantStatus {
				t.Errorf("checkpointed claim status = %q, want %q", got, wantStatus)
			}
		})
	}
}

// TestAWaitingClaimWakesWhenTheNodeReleasesItsChannel: a channel that another
// (deleted) domain's claim still holds on the node is handed to the waiting
// claim as soon as that claim is unprepared, within the same call.
func TestAWaitingClaimWakesWhenTheNodeReleasesItsChannel(t *testing.T) {
	e := newNodeEnv(t, "gb200-nvl72")
	e.domains.set(domain("old", "team-a", uidA, e.clique, ptr.To[int32](3), testNode))
	d := e.driverWaiting(10 * time.Second)
	old := channelClaim("wa", "team-a", "claim-a", 0, uidA, "")
	if res := prepare(t, d, old); res.Err != nil {
		t.Fatal(res.Err)
	}
	e.domains.remove(uidA)
	e.domains.set(domain("new", "team-b", uidB, e.clique, ptr.To[int32](3), testNode))
	done := make(chan kubeletplugin.PrepareResult, 1)
	go func() { done <- prepare(t, d, channelClaim("wb", "team-b", "claim-b", 1, uidB, "")) }()
	time.Sleep(200 * time.Millisecond)
	released := time.Now()
	if err := unprepare(t, d, old); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.Err != nil {
			t.Fatalf("the waiting claim once channel 3 was released: %v", res.Err)
		}
		if took := time.Since(released); took > time.Second {
			t.Errorf("the waiting claim was prepared %s after the release", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting claim was not prepared after the release")
	}
}

// TestDomainChangesWakeTheWaitersOfThatDomainOnly covers the informer's
// handler: add, update and delete (also a tombstone) wake the waiters of the
// changed domain, one channel shared by them, and no one else.
func TestDomainChangesWakeTheWaitersOfThatDomainOnly(t *testing.T) {
	a := cdtest.MakeComputeDomain("a", "team-a").UID(uidA).Obj()
	b := cdtest.MakeComputeDomain("b", "team-b").UID(uidB).Obj()
	events := map[string]func(h toolscache.ResourceEventHandler){
		"add":    func(h toolscache.ResourceEventHandler) { h.OnAdd(a, false) },
		"update": func(h toolscache.ResourceEventHandler) { h.OnUpdate(a, a) },
		"delete": func(h toolscache.ResourceEventHandler) { h.OnDelete(a) },
		"tombstone": func(h toolscache.ResourceEventHandler) {
			h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "team-a/a", Obj: a})
		},
	}
	for name, event := range events {
		t.Run(name, func(t *testing.T) {
			var c DomainChanges
			first, second, other := c.Changed(uidA), c.Changed(uidA), c.Changed(uidB)
			event(c.Handler())
			for what, ch := range map[string]<-chan struct{}{"first waiter": first, "second waiter": second} {
				select {
				case <-ch:
				default:
					t.Errorf("%s of domain a not woken", what)
				}
			}
			select {
			case <-other:
				t.Error("the waiter of domain b was woken by a change of a")
			default:
			}
			select {
			case <-c.Changed(uidA):
				t.Error("a new subscription is closed before the next change")
			default:
			}
			c.Handler().OnUpdate(b, b)
			if _, open := <-other; open {
				t.Error("the waiter of domain b not woken by its change")
			}
		})
	}
}

// TestASlowFirstListOfANamespaceHoldsUpNoOtherClaim: the first prepare in a
// namespace lists its ComputeDomains, which under a loaded API server takes
// time; it does so before it takes the node state's lock, so a claim of
// another namespace is prepared meanwhile.
func TestASlowFirstListOfANamespaceHoldsUpNoOtherClaim(t *testing.T) {
	e := newNodeEnv(t, "gb200-nvl72")
	e.domains.set(domain("a", "team-a", uidA, e.clique, ptr.To[int32](3), testNode))
	e.domains.set(domain("b", "team-b", uidB, e.clique, ptr.To[int32](4), testNode))
	listed := make(chan struct{})
	e.domains.mu.Lock()
	e.domains.listing = map[string]chan struct{}{"team-a": listed}
	e.domains.mu.Unlock()
	d := e.driverWaiting(10 * time.Second)

	slow := make(chan kubeletplugin.PrepareResult, 1)
	go func() { slow <- prepare(t, d, channelClaim("wa", "team-a", "claim-a", 0, uidA, "")) }()
	time.Sleep(100 * time.Millisecond)
	other := make(chan kubeletplugin.PrepareResult, 1)
	go func() { other <- prepare(t, d, channelClaim("wb", "team-b", "claim-b", 1, uidB, "")) }()
	select {
	case res := <-other:
		if res.Err != nil {
			t.Fatalf("the other namespace's claim: %v", res.Err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the other namespace's claim waited for the first list of team-a's domains")
	}
	close(listed)
	select {
	case res := <-slow:
		if res.Err != nil {
			t.Fatalf("the claim whose namespace was being listed: %v", res.Err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the claim whose namespace was listed was not prepared")
	}
}

// A prepare holds the namespaces its claim's domain is looked up among: the claim's own for a channel claim,
// every namespace ("") for a daemon claim, whose domain is in a tenant's namespace and never in the operator's.
func TestAPrepareHoldsTheNamespaceItsDomainIsLookedUpIn(t *testing.T) {
	e := newNodeEnv(t, "gb200-nvl72")
	d := e.driver()
	for _, tc := range []struct {
		claim *resourceapi.ResourceClaim
		want  string
	}{
		{channelClaim("w", "team-a", "claim-1", 0, uidA, ""), "team-a"},
		{daemonClaim("d", "nvidia-dra", "claim-2", 0, uidA), ""},
	} {
		if got := d.state.domainNamespace(tc.claim); got != tc.want {
			t.Errorf("%s claim %s: domains looked up in %q, want %q", tc.claim.Namespace, tc.claim.Name, got, tc.want)
		}
	}
}
