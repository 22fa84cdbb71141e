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
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/imex"
)

// Member condition reasons (ours).
const (
	ReasonIMEXReady       = "IMEXReady"
	ReasonIMEXNotRunning  = "IMEXNotRunning"
	ReasonIMEXNotReady    = "IMEXNotReady"
	ReasonIMEXRestarted   = "IMEXRestarted"
	ReasonPeersConnected  = "AllPeersConnected"
	ReasonPeersMissing    = "PeersNotConnected"
	ReasonPeersUnknown    = "PeersNotReported"
	ReasonWaitingForIMEX  = "WaitingForIMEX"
	maxPeersNamedInStatus = 10
)

// Observation is what the daemon saw in one look at its IMEX process.
type Observation struct {
	// Running tells whether the supervisor has a process up.
	Running bool
	// Restarted is set while the daemon reports that it (and with it its
	// IMEX process) restarted after an exit: not ready, whatever IMEX says.
	Restarted bool
	// State is the probe's answer (zero when not running, or when the
	// process left too many probes in a row unanswered).
	State imex.State
	// Unanswered is set when State is not an answer: the process left
	// its last probes unanswered.
	Unanswered bool
	// Peers is the ensemble from the domain's status, self included.
	Peers []Peer
	// Self is this node's address.
	Self string
	// Joining are peer addresses added within the connect grace period: not
	// being connected to them yet is not (yet) a failure.
	Joining map[string]bool
}

// MemberStatus computes the record's status from an observation, keeping the
// transition times of unchanged conditions from prev.
func MemberStatus(obs Observation, prev []metav1.Condition, now time.Time) v1beta1.IMEXNodeStatus {
	conds := append([]metav1.Condition(nil), prev...)
	imex := metav1.Condition{Type: v1beta1.IMEXNodeConditionIMEXReady}
	switch {
	case obs.Restarted:
		imex.Status, imex.Reason, imex.Message = metav1.ConditionFalse, ReasonIMEXRestarted, "the daemon restarted after an exit, and with it the IMEX process (reported for at least one probe interval)"
	case !obs.Running:
		imex.Status, imex.Reason, imex.Message = metav1.ConditionFalse, ReasonIMEXNotRunning, "the IMEX process is not running (starting or restarting after an exit)"
	case obs.Unanswered:
		imex.Status, imex.Reason, imex.Message = metav1.ConditionFalse, ReasonIMEXNotReady, "the IMEX process leaves its probes unanswered"
	case !obs.State.Ready:
		imex.Status, imex.Reason, imex.Message = metav1.ConditionFalse, ReasonIMEXNotReady, "the IMEX process does not answer READY"
	default:
		imex.Status, imex.Reason, imex.Message = metav1.ConditionTrue, ReasonIMEXReady, "the IMEX process answers READY"
	}

	peers := metav1.Condition{Type: v1beta1.IMEXNodeConditionPeersConnected}
	names := map[string]string{}
	for _, p := range obs.Peers {
		names[p.IPAddress] = p.NodeName
	}
	var missing []string
	joining := 0
	for _, a := range obs.State.MissingPeers(obs.Self, Addresses(obs.Peers)) {
		if obs.Joining[a] {
			joining++
		} else {
			missing = append(missing, a)
		}
	}
	switch {
	case imex.Status != metav1.ConditionTrue:
		peers.Status, peers.Reason, peers.Message = metav1.ConditionFalse, ReasonWaitingForIMEX, "no peer connections while the IMEX process is not ready"
	case len(missing) > 0:
		peers.Status, peers.Reason = metav1.ConditionFalse, ReasonPeersMissing
		peers.Message = fmt.Sprintf("not connected to %d of %d peers: %s", len(missing), len(obs.Peers)-1, namePeers(missing, names))
	case joining > 0:
		// Not a failure yet, but not connected either: stay as we were
		// reported until the grace period ends, so a join does not flap.
		if c := meta.FindStatusCondition(prev, peers.Type); c != nil {
			peers.Status, peers.Reason, peers.Message = c.Status, c.Reason, c.Message
		} else {
			peers.Status, peers.Reason, peers.Message = metav1.ConditionFalse, ReasonPeersMissing, fmt.Sprintf("connecting to %d new peers", joining)
		}
	case obs.State.Peers == nil:
		peers.Status, peers.Reason, peers.Message = metav1.ConditionTrue, ReasonPeersUnknown, "the IMEX build does not report peer connections; READY is taken as connected"
	default:
		peers.Status, peers.Reason, peers.Message = metav1.ConditionTrue, ReasonPeersConnected, "connected to every peer the domain lists in this clique"
	}
	t := metav1.NewTime(now)
	for _, c := range []metav1.Condition{imex, peers} {
		c.LastTransitionTime = t
		c.Message = v1beta1.CapMessage(c.Message, v1beta1.MaxConditionMessageBytes)
		meta.SetStatusCondition(&conds, c)
	}
	return v1beta1.IMEXNodeStatus{
		Ready:      imex.Status == metav1.ConditionTrue && peers.Status == metav1.ConditionTrue,
		Conditions: conds,
	}
}

func namePeers(addrs []string, names map[string]string) string {
	var parts []string
	for i, a := range addrs {
		if i == maxPeersNamedInStatus {
			parts = append(parts, fmt.Sprintf("and %d more", len(addrs)-i))
			break
		}
		if n := names[a]; n != "" {
			parts = append(parts, fmt.Sprintf("%s (%s)", n, a))
		} else {
			parts = append(parts, a)
		}
	}
	return strings.Join(parts, ", ")
}

// SameStatus tells whether writing b over a would change anything but
// transition times.
func SameStatus(a, b v1beta1.IMEXNodeStatus) bool {
	if a.Ready != b.Ready || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for _, ca := range a.Conditions {
		cb := meta.FindStatusCondition(b.Conditions, ca.Type)
		if cb == nil || ca.Status != cb.Status || ca.Reason != cb.Reason || ca.Message != cb.Message {
			return false
		}
	}
	return true
}
