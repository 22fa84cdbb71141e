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

package imexclique

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

func TestTrustNodes(t *testing.T) {
	daemons := Daemons{
		"pod-a": {Node: "a", IP: "10.0.0.1"},
		"pod-b": {Node: "b", IP: "10.0.0.2"},
		"pod-c": {Node: "c"},
		"pod-d": {Node: "d", IP: "10.0.0.4", Terminating: true},
	}
	cases := map[string]struct {
		nodes        []v1beta1.IMEXNode
		wantTrusted  []string
		wantRefusals map[string]string
	}{
		"records owned by the daemon pods of their nodes, at their addresses, count": {
			nodes:       []v1beta1.IMEXNode{node("a", "10.0.0.1", "pod-a"), node("b", "10.0.0.2", "pod-b")},
			wantTrusted: []string{"a", "b"},
		},
		"a record no daemon pod owns is refused (a forged join)": {
			nodes:        []v1beta1.IMEXNode{node("a", "10.0.0.1", "pod-a"), node("intruder", "10.0.0.9", "")},
			wantTrusted:  []string{"a"},
			wantRefusals: map[string]string{"intruder": "it is not owned by a long-lived IMEX daemon pod"},
		},
		"a record naming another node than its daemon pod's is refused": {
			nodes:        []v1beta1.IMEXNode{node("intruder", "10.0.0.1", "pod-a")},
			wantRefusals: map[string]string{"intruder": "it names node intruder but its IMEX daemon pod runs on node a"},
		},
		"a record naming another address than its daemon pod's is refused (a replaced IP)": {
			nodes:        []v1beta1.IMEXNode{node("b", "10.0.0.99", "pod-b")},
			wantRefusals: map[string]string{"b": "address 10.0.0.99 is not the address 10.0.0.2 of its IMEX daemon pod on node b"},
		},
		"records of a daemon pod without an address yet, one being deleted, or one gone neither count nor are refused": {
			nodes: []v1beta1.IMEXNode{node("c", "10.0.0.3", "pod-c"), node("d", "10.0.0.4", "pod-d"), node("f", "10.0.0.6", "pod-gone")},
		},
		"a record without an address yet (the daemon before it knows its own) counts": {
			nodes:       []v1beta1.IMEXNode{node("a", "", "pod-a")},
			wantTrusted: []string{"a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			trusted, refused := TrustNodes(tc.nodes, daemons)
			var gotTrusted []string
			for _, n := range trusted {
				gotTrusted = append(gotTrusted, n.Name)
			}
			var gotRefusals map[string]string
			for _, f := range refused {
				if gotRefusals == nil {
					gotRefusals = map[string]string{}
				}
				gotRefusals[f.Node.Name] = f.Reason
			}
			if diff := cmp.Diff(tc.wantTrusted, gotTrusted); diff != "" {
				t.Errorf("trusted (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRefusals, gotRefusals); diff != "" {
				t.Errorf("refused (-want +got):\n%s", diff)
			}
		})
	}
}
