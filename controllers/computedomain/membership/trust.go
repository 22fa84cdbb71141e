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
	"fmt"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// Daemons are where a domain's IMEX daemon pods run: node name → the pod's IP ("" while the pod has none
// yet). Only the operator namespace's DaemonSet controller creates them, so they, not the member records that
// any daemon's token may write for its own node, say which nodes belong to a domain and at which address.
type Daemons map[string]string

// Refusal is a member record the controller does not trust, with the reason.
type Refusal struct {
	Member v1beta1.ComputeDomainMember
	Reason string
}

// Trust keeps the member records that agree with where the domain's daemons run: a record counts only when a
// daemon pod of the domain runs on its node and the record's address is that pod's. The others are refused
// (a node that is none of the domain's, forging its way into another domain's ensemble, or a record naming an
// address that is not its daemon's), except records whose daemon pod has no address yet: the pod's status
// catches up with the record its daemon wrote, and the pod's update brings the next pass. Those are pending,
// neither trusted nor refused.
func Trust(members []v1beta1.ComputeDomainMember, daemons Daemons) (trusted []v1beta1.ComputeDomainMember, refused []Refusal) {
	for _, m := range members {
		ip, runs := daemons[m.Spec.NodeName]
		switch {
		case !runs:
			refused = append(refused, Refusal{Member: m, Reason: fmt.Sprintf("no IMEX daemon of the domain runs on node %s", m.Spec.NodeName)})
		case ip == "":
			// pending
		case m.Spec.IPAddress != "" && m.Spec.IPAddress != ip:
			refused = append(refused, Refusal{Member: m, Reason: fmt.Sprintf("address %s is not the address %s of the domain's IMEX daemon on node %s", m.Spec.IPAddress, ip, m.Spec.NodeName)})
		default:
			trusted = append(trusted, m)
		}
	}
	return trusted, refused
}
