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

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

func TestTrust(t *testing.T) {
	member := func(node, ip string) v1beta1.ComputeDomainMember {
		return *utiltesting.MakeComputeDomainMember(baseCD.Obj(), node, opNS).Clique(rackA).IP(ip).Ready().Obj()
	}
	daemons := Daemons{"n1": "10.0.0.1", "n2": "10.0.0.2", "n3": ""}
	cases := map[string]struct {
		members      []v1beta1.ComputeDomainMember
		wantTrusted  []string
		wantRefusals []string
	}{
		"records of the nodes the daemons run on, at their addresses, count": {
			members:     []v1beta1.ComputeDomainMember{member("n1", "10.0.0.1"), member("n2", "10.0.0.2")},
			wantTrusted: []string{"n1", "n2"},
		},
		"a record of a node without a daemon of the domain is refused (a forged join)": {
			members:      []v1beta1.ComputeDomainMember{member("n1", "10.0.0.1"), member("intruder", "10.0.0.9")},
			wantTrusted:  []string{"n1"},
			wantRefusals: []string{"intruder: no IMEX daemon of the domain runs on node intruder"},
		},
		"a record naming another address than its daemon's is refused (a replaced IP)": {
			members:      []v1beta1.ComputeDomainMember{member("n1", "10.0.0.2")},
			wantRefusals: []string{"n1: address 10.0.0.2 is not the address 10.0.0.1 of the domain's IMEX daemon on node n1"},
		},
		"a record whose daemon pod has no address yet is pending, neither counted nor refused": {
			members: []v1beta1.ComputeDomainMember{member("n3", "10.0.0.3")},
		},
		"a record without an address yet (the daemon before it knows its own) counts": {
			members:     []v1beta1.ComputeDomainMember{member("n1", "")},
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
