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

package v1beta1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestChannelReady(t *testing.T) {
	channel := func(c int32) *int32 { return &c }
	node := func(name, clique string, status ComputeDomainStatusValue) ComputeDomainNode {
		return ComputeDomainNode{Name: name, IPAddress: "10.0.0.1", CliqueID: clique, Status: status}
	}
	type result struct {
		Channel int32
		Ready   bool
	}
	cases := map[string]struct {
		status ComputeDomainStatus
		want   result
	}{
		"a Ready node whose clique holds a channel gets it": {
			status: ComputeDomainStatus{
				Nodes:   []ComputeDomainNode{node("n1", "c.1", ComputeDomainStatusReady)},
				Cliques: []ComputeDomainClique{{CliqueID: "c.2", Channel: channel(3)}, {CliqueID: "c.1", Channel: channel(7)}},
			},
			want: result{Channel: 7, Ready: true},
		},
		"channel 0 is a channel": {
			status: ComputeDomainStatus{
				Nodes:   []ComputeDomainNode{node("n1", "c.1", ComputeDomainStatusReady)},
				Cliques: []ComputeDomainClique{{CliqueID: "c.1", Channel: channel(0)}},
			},
			want: result{Channel: 0, Ready: true},
		},
		"a node that is not Ready waits, even with a channel": {
			status: ComputeDomainStatus{
				Nodes:   []ComputeDomainNode{node("n1", "c.1", ComputeDomainStatusNotReady)},
				Cliques: []ComputeDomainClique{{CliqueID: "c.1", Channel: channel(7)}},
			},
		},
		"a Ready node whose clique has no channel yet waits": {
			status: ComputeDomainStatus{
				Nodes:   []ComputeDomainNode{node("n1", "c.1", ComputeDomainStatusReady)},
				Cliques: []ComputeDomainClique{{CliqueID: "c.1"}},
			},
		},
		"the node listed Ready in another clique waits": {
			status: ComputeDomainStatus{
				Nodes:   []ComputeDomainNode{node("n1", "c.2", ComputeDomainStatusReady)},
				Cliques: []ComputeDomainClique{{CliqueID: "c.1", Channel: channel(7)}, {CliqueID: "c.2", Channel: channel(3)}},
			},
		},
		"a node the status does not list waits": {
			status: ComputeDomainStatus{
				Nodes:   []ComputeDomainNode{node("n2", "c.1", ComputeDomainStatusReady)},
				Cliques: []ComputeDomainClique{{CliqueID: "c.1", Channel: channel(7)}},
			},
		},
		"an empty status waits": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cd := &ComputeDomain{Status: tc.status}
			var got result
			got.Channel, got.Ready = cd.ChannelReady("n1", "c.1")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ChannelReady (-want +got):\n%s", diff)
			}
		})
	}
}
