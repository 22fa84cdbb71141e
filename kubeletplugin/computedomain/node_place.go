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
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// maxCauseBytes bounds the part of a prepare error quoted from the domain's
// status (the kubelet puts the error in the pod's event).
const maxCauseBytes = 1024

// whyNotPlaced says what the domain's status shows instead of node's place
// in it (node listed Ready in clique, and the clique holding a channel):
// the cause a waiting channel claim names when its wait ends.
func whyNotPlaced(cd *apiv1beta1.ComputeDomain, node, clique string) string {
	var entry *apiv1beta1.ComputeDomainNode
	for i := range cd.Status.Nodes {
		if cd.Status.Nodes[i].Name == node {
			entry = &cd.Status.Nodes[i]
		}
	}
	var why string
	switch {
	case entry == nil:
		why = fmt.Sprintf("its status does not list node %s (the controller lists a node once a workload claim of the domain is allocated on it for a pod; %s)",
			node, conditionText(cd, apiv1beta1.ComputeDomainConditionReady))
	case entry.Status != apiv1beta1.ComputeDomainStatusReady:
		why = fmt.Sprintf("its status lists node %s %s in clique %q (%s)", node, entry.Status, entry.CliqueID, nodeCause(cd, node))
	case entry.CliqueID != clique:
		why = fmt.Sprintf("its status lists node %s Ready in clique %q, but this node's GPUs are in NVLink clique %q (the node's IMEXNode or its %s label disagrees with its GPUs)",
			node, entry.CliqueID, clique, apiv1beta1.CliqueNodeLabelKey)
	default:
		why = fmt.Sprintf("its status gives clique %s no IMEX channel (%s)", clique, conditionText(cd, apiv1beta1.ComputeDomainConditionReady))
	}
	return apiv1beta1.CapMessage(why, maxCauseBytes)
}

// nodeCause is what the domain's DaemonsReady condition says of node: the
// controller names each node that is not ready as "node <name> (<cause>)",
// parts joined by "; " (controllers/computedomain/status), the first ten of
// them; for a node past those the whole condition.
func nodeCause(cd *apiv1beta1.ComputeDomain, node string) string {
	c := meta.FindStatusCondition(cd.Status.Conditions, apiv1beta1.ComputeDomainConditionDaemonsReady)
	if c == nil {
		return conditionText(cd, apiv1beta1.ComputeDomainConditionDaemonsReady)
	}
	part := "node " + node + " ("
	i := strings.Index(c.Message, part)
	if i < 0 {
		return conditionText(cd, apiv1beta1.ComputeDomainConditionDaemonsReady)
	}
	msg := c.Message[i+len(part):]
	if j := strings.Index(msg, "; node "); j >= 0 {
		msg = msg[:j]
	} else if j := strings.LastIndex(msg, "; and "); j >= 0 {
		msg = msg[:j]
	}
	return fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, strings.TrimSuffix(msg, ")"))
}

// conditionText is one condition of the domain as "Type=Status Reason:
// message".
func conditionText(cd *apiv1beta1.ComputeDomain, condType string) string {
	c := meta.FindStatusCondition(cd.Status.Conditions, condType)
	if c == nil {
		return fmt.Sprintf("no %s condition yet", condType)
	}
	return fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
}
