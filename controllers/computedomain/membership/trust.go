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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// Daemon is one IMEX daemon pod of a domain, as the cache of the operator namespace shows it.
type Daemon struct {
	Node string
	// IP is the pod's address ("" while it has none yet).
	IP string
	// Terminating: the pod is being deleted (its node left the domain, or the node was lost).
	Terminating bool
}

// Daemons are a domain's IMEX daemon pods by pod UID. Only the operator namespace's DaemonSet controller
// creates them, so they, not the member records that any daemon's token may write for its own node, say which
// nodes belong to a domain and at which address.
type Daemons map[types.UID]Daemon

// Refusal is a member record the controller does not trust, with the reason.
type Refusal struct {
	Member v1beta1.ComputeDomainMember
	Reason string
}

// Trust keeps the member records that agree with the daemon pod that owns them: a record counts only when its
// owner is a live daemon pod of the domain, on the record's node, and the record's address is that pod's. A
// record without such an owner is refused (a node forging its way into another domain's ensemble, or a record
// naming another node or address than its daemon's). A record whose owner is gone or terminating is leaving
// with its daemon (the garbage collector removes it after the pod), and one whose daemon has no address yet
// is pending (the pod's status catches up with the record its daemon wrote): neither counts, neither is
// refused.
func Trust(members []v1beta1.ComputeDomainMember, daemons Daemons) (trusted []v1beta1.ComputeDomainMember, refused []Refusal) {
	refuse := func(m v1beta1.ComputeDomainMember, format string, args ...any) {
		refused = append(refused, Refusal{Member: m, Reason: fmt.Sprintf(format, args...)})
	}
	for _, m := range members {
		owner := podOwner(m)
		if owner == nil {
			refuse(m, "it is not owned by an IMEX daemon pod of the domain")
			continue
		}
		d, known := daemons[owner.UID]
		switch {
		case !known:
			// The owner is gone (or never was one of the domain's daemons): not counted, and
			// not reported, since the record of a daemon that just left looks the same.
		case d.Node != m.Spec.NodeName:
			refuse(m, "it names node %s but its IMEX daemon pod runs on node %s", m.Spec.NodeName, d.Node)
		case d.Terminating, d.IP == "":
			// leaving, or pending
		case m.Spec.IPAddress != "" && m.Spec.IPAddress != d.IP:
			refuse(m, "address %s is not the address %s of its IMEX daemon pod on node %s", m.Spec.IPAddress, d.IP, d.Node)
		default:
			trusted = append(trusted, m)
		}
	}
	return trusted, refused
}

// podOwner is the record's owning Pod reference, if any.
func podOwner(m v1beta1.ComputeDomainMember) *metav1.OwnerReference {
	for i, ref := range m.OwnerReferences {
		if ref.Kind == "Pod" && ref.APIVersion == "v1" {
			return &m.OwnerReferences[i]
		}
	}
	return nil
}
