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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/imex"
)

func TestMemberStatus(t *testing.T) {
	peers := []Peer{{NodeName: "n0", IPAddress: "10.0.0.1"}, {NodeName: "n1", IPAddress: "10.0.0.2", Index: 1}, {NodeName: "n2", IPAddress: "10.0.0.3", Index: 2}}
	connected := map[string]imex.PeerState{"10.0.0.2": imex.PeerConnected, "10.0.0.3": imex.PeerConnected}
	oneLost := map[string]imex.PeerState{"10.0.0.2": imex.PeerConnected, "10.0.0.3": imex.PeerDisconnected}
	ready := []metav1.Condition{
		{Type: v1beta1.IMEXNodeConditionIMEXReady, Status: metav1.ConditionTrue, Reason: ReasonIMEXReady, Message: "the IMEX process answers READY"},
		{Type: v1beta1.IMEXNodeConditionPeersConnected, Status: metav1.ConditionTrue, Reason: ReasonPeersConnected, Message: "connected to every peer the domain lists in this clique"},
	}
	type cond struct{ imex, peers string }
	cases := map[string]struct {
		obs       Observation
		prev      []metav1.Condition
		wantReady bool
		want      cond
	}{
		"IMEX ready and connected to every peer": {
			obs:       Observation{Running: true, State: imex.State{Ready: true, Peers: connected}, Peers: peers, Self: "10.0.0.1"},
			wantReady: true, want: cond{ReasonIMEXReady, ReasonPeersConnected},
		},
		"IMEX not running (exited, restarting)": {
			obs:  Observation{Running: false, Peers: peers, Self: "10.0.0.1"},
			want: cond{ReasonIMEXNotRunning, ReasonWaitingForIMEX},
		},
		"a restarted daemon is not ready while it reports the restart, even with IMEX ready and connected": {
			obs:  Observation{Running: true, Restarted: true, State: imex.State{Ready: true, Peers: connected}, Peers: peers, Self: "10.0.0.1"},
			prev: ready,
			want: cond{ReasonIMEXRestarted, ReasonWaitingForIMEX},
		},
		"IMEX running but not answering READY": {
			obs:  Observation{Running: true, State: imex.State{}, Peers: peers, Self: "10.0.0.1"},
			want: cond{ReasonIMEXNotReady, ReasonWaitingForIMEX},
		},
		"a peer that was connected and is lost is reported at once": {
			obs:  Observation{Running: true, State: imex.State{Ready: true, Peers: oneLost}, Peers: peers, Self: "10.0.0.1"},
			prev: ready,
			want: cond{ReasonIMEXReady, ReasonPeersMissing},
		},
		"a peer still joining keeps a ready node ready": {
			obs:       Observation{Running: true, State: imex.State{Ready: true, Peers: oneLost}, Peers: peers, Self: "10.0.0.1", Joining: map[string]bool{"10.0.0.3": true}},
			prev:      ready,
			wantReady: true, want: cond{ReasonIMEXReady, ReasonPeersConnected},
		},
		"a new node waits for its joining peers before it is ready": {
			obs:  Observation{Running: true, State: imex.State{Ready: true, Peers: oneLost}, Peers: peers, Self: "10.0.0.1", Joining: map[string]bool{"10.0.0.3": true}},
			want: cond{ReasonIMEXReady, ReasonPeersMissing},
		},
		"real nvidia-imex reports no peers: READY is taken as connected": {
			obs:       Observation{Running: true, State: imex.State{Ready: true}, Peers: peers, Self: "10.0.0.1"},
			wantReady: true, want: cond{ReasonIMEXReady, ReasonPeersUnknown},
		},
		"a node without a clique has no peers and is ready with IMEX": {
			obs:       Observation{Running: true, State: imex.State{Ready: true, Peers: map[string]imex.PeerState{}}, Self: "10.0.0.1"},
			wantReady: true, want: cond{ReasonIMEXReady, ReasonPeersConnected},
		},
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := MemberStatus(tc.obs, tc.prev, now)
			if got.Ready != tc.wantReady {
				t.Errorf("ready = %v, want %v (conditions %+v)", got.Ready, tc.wantReady, got.Conditions)
			}
			reasons := cond{}
			for _, c := range got.Conditions {
				switch c.Type {
				case v1beta1.IMEXNodeConditionIMEXReady:
					reasons.imex = c.Reason
				case v1beta1.IMEXNodeConditionPeersConnected:
					reasons.peers = c.Reason
				}
			}
			if diff := cmp.Diff(tc.want, reasons, cmp.AllowUnexported(cond{})); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMemberStatusNamesLostPeersAndKeepsTransitionTimes(t *testing.T) {
	peers := []Peer{{NodeName: "n0", IPAddress: "10.0.0.1"}, {NodeName: "n1", IPAddress: "10.0.0.2", Index: 1}}
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	first := MemberStatus(Observation{Running: true, State: imex.State{Ready: true, Peers: map[string]imex.PeerState{"10.0.0.2": imex.PeerConnected}}, Peers: peers, Self: "10.0.0.1"}, nil, t0)
	second := MemberStatus(Observation{Running: true, State: imex.State{Ready: true, Peers: map[string]imex.PeerState{"10.0.0.2": imex.PeerDisconnected}}, Peers: peers, Self: "10.0.0.1"}, first.Conditions, t0.Add(time.Minute))
	want := []metav1.Condition{
		{Type: v1beta1.IMEXNodeConditionIMEXReady, Status: metav1.ConditionTrue, Reason: ReasonIMEXReady, Message: "the IMEX process answers READY", LastTransitionTime: metav1.NewTime(t0)},
		{Type: v1beta1.IMEXNodeConditionPeersConnected, Status: metav1.ConditionFalse, Reason: ReasonPeersMissing, Message: "not connected to 1 of 1 peers: n1 (10.0.0.2)", LastTransitionTime: metav1.NewTime(t0.Add(time.Minute))},
	}
	if diff := cmp.Diff(want, second.Conditions, cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if SameStatus(first, second) {
		t.Error("SameStatus says a lost peer changes nothing")
	}
	if !SameStatus(second, MemberStatus(Observation{Running: true, State: imex.State{Ready: true, Peers: map[string]imex.PeerState{"10.0.0.2": imex.PeerDisconnected}}, Peers: peers, Self: "10.0.0.1"}, second.Conditions, t0.Add(2*time.Minute))) {
		t.Error("SameStatus says an unchanged observation changed")
	}
}
