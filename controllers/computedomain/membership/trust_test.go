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

package membership

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

func TestTrust(t *testing.T) {
	member := func(node, ip string, owner types.UID) v1beta1.ComputeDomainMember {
		w := utiltesting.MakeComputeDomainMember(baseCD.Obj(), node, opNS).Clique(rackA).IP(ip).Ready()
		if owner != "" {
			w.OwnedBy("imex-"+node, owner)
		}
		return *w.Obj()
	}
	daemons := Daemons{
		"pod-1": {Node: "n1", IP: "10.0.0.1"},
		"pod-2": {Node: "n2", IP: "10.0.0.2"},
		"pod-3": {Node: "n3"},
		"pod-4": {Node: "n4", IP: "10.0.0.4", Terminating: true},
	}
	cases := map[string]struct {
		members      []v1beta1.ComputeDomainMember
		wantTrusted  []string
		wantRefusals []string
	}{
		"records owned by the daemon pods of their nodes, at their addresses, count": {
			members:     []v1beta1.ComputeDomainMember{member("n1", "10.0.0.1", "pod-1"), member("n2", "10.0.0.2", "pod-2")},
			wantTrusted: []string{"n1", "n2"},
		},
		"a record no daemon pod owns is refused (a forged join)": {
			members:      []v1beta1.ComputeDomainMember{member("n1", "10.0.0.1", "pod-1"), member("intruder", "10.0.0.9", "")},
			wantTrusted:  []string{"n1"},
			wantRefusals: []string{"intruder: it is not owned by an IMEX daemon pod of the domain"},
		},
		"a record naming another node than its daemon pod's is refused": {
			members:      []v1beta1.ComputeDomainMember{member("intruder", "10.0.0.1", "pod-1")},
			wantRefusals: []string{"intruder: it names node intruder but its IMEX daemon pod runs on node n1"},
		},
		"a record naming another address than its daemon pod's is refused (a replaced IP)": {
			members:      []v1beta1.ComputeDomainMember{member("n1", "10.0.0.2", "pod-1")},
			wantRefusals: []string{"n1: address 10.0.0.2 is not the address 10.0.0.1 of its IMEX daemon pod on node n1"},
		},
		"records of a daemon pod without an address yet, one being deleted, or one gone neither count nor are refused": {
			members: []v1beta1.ComputeDomainMember{member("n3", "10.0.0.3", "pod-3"), member("n4", "10.0.0.4", "pod-4"), member("n5", "10.0.0.5", "pod-gone")},
		},
		"a record without an address yet (the daemon before it knows its own) counts": {
			members:     []v1beta1.ComputeDomainMember{member("n1", "", "pod-1")},
			wantTrusted: []string{"n1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			trusted, refused := Trust(tc.members, daemons)
			var gotTrusted, gotRefusals []string
			for _, m := range trusted {
				gotTrusted = append(gotTrusted, m.Spec.NodeName)
			}
			for _, r := range refused {
				gotRefusals = append(gotRefusals, r.Member.Spec.NodeName+": "+r.Reason)
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
