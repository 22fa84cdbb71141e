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

package status

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// member is one node of the domain as the status sees it: where its IMEX daemon is, whether it serves the
// domain, and why not.
type member struct {
	name, ip, clique string
	ready            bool
	// daemonLost: the node is not ready because its daemon is not (no trusted daemon, not in its clique's
	// ensemble, or IMEX not answering READY), rather than because it lost some peers.
	daemonLost bool
	// cause says why the node is not ready, at most maxCauseBytes long.
	cause string
}

// maxCauseBytes bounds what one node's cause adds to a domain condition: maxNamed of them stay far below
// the condition's limit, whatever an IMEXNode says.
const maxCauseBytes = 1024

// membersOf turns the nodes into members, one per node name (the first entry wins), and returns the indices
// their cliques' ensembles give them.
func membersOf(nodes []Node) ([]member, map[string]int32) {
	seen := map[string]bool{}
	fixed := map[string]int32{}
	out := make([]member, 0, len(nodes))
	for _, n := range nodes {
		if n.Name == "" || seen[n.Name] {
			continue
		}
		seen[n.Name] = true
		out = append(out, memberOf(n))
		if n.IMEX != nil && n.Index != nil {
			fixed[n.Name] = *n.Index
		}
	}
	sortMembers(out)
	return out, fixed
}

func memberOf(n Node) member {
	switch {
	case n.NoFabric:
		return member{name: n.Name, ready: true}
	case n.IMEX == nil:
		return member{name: n.Name, daemonLost: true, cause: controllerCause(v1beta1.IMEXNodeReasonNoIMEXDaemon,
			fmt.Sprintf("no long-lived IMEX daemon reports for node %s (the chart's IMEX DaemonSet runs on nodes labeled %s)", n.Name, v1beta1.CliqueNodeLabelKey))}
	}
	m := member{name: n.Name, ip: n.IMEX.Spec.IPAddress, clique: n.IMEX.Spec.CliqueID}
	if n.Index == nil {
		m.daemonLost = true
		m.cause = controllerCause(v1beta1.IMEXNodeReasonNotInEnsemble,
			fmt.Sprintf("the IMEX ensemble of clique %s does not list node %s yet", m.clique, n.Name))
		return m
	}
	m.ready = n.IMEX.Status.Ready
	m.daemonLost = !meta.IsStatusConditionTrue(n.IMEX.Status.Conditions, v1beta1.IMEXNodeConditionIMEXReady)
	if !m.ready {
		m.cause = daemonCause(n.IMEX.Status)
	}
	return m
}

// controllerCause is the cause of a node the controller finds not ready before its daemon's word counts.
func controllerCause(reason, message string) string {
	return fmt.Sprintf("%s=%s %s: %s", v1beta1.IMEXNodeConditionIMEXReady, metav1.ConditionFalse, reason, message)
}

// daemonCause says why a daemon is not ready, from the first of its conditions that is not True.
func daemonCause(s v1beta1.IMEXNodeStatus) string {
	for _, t := range []string{v1beta1.IMEXNodeConditionIMEXReady, v1beta1.IMEXNodeConditionPeersConnected} {
		c := meta.FindStatusCondition(s.Conditions, t)
		if c == nil || c.Status == metav1.ConditionTrue {
			continue
		}
		return v1beta1.CapMessage(fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message), maxCauseBytes)
	}
	return "daemon has not reported ready"
}
