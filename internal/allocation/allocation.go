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

// Package allocation reads what the scheduler wrote into a ResourceClaim's allocation.
package allocation

import (
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
)

// NodeNameField is the node field a node-local allocation's node selector matches on.
const NodeNameField = "metadata.name"

// Node returns the node a claim is allocated on. An allocation of node-local devices (every device of our
// drivers is: each plugin publishes its node's slices) carries a node selector with one term holding one
// `metadata.name In [<node>]` field requirement; an unallocated claim, or anything else, names no single node.
func Node(c *resourcev1.ResourceClaim) (string, bool) {
	if c.Status.Allocation == nil {
		return "", false
	}
	return SelectedNode(c.Status.Allocation.NodeSelector)
}

// SelectedNode returns the one node a node selector of a node-local allocation names.
func SelectedNode(sel *corev1.NodeSelector) (string, bool) {
	if sel == nil || len(sel.NodeSelectorTerms) != 1 {
		return "", false
	}
	for _, req := range sel.NodeSelectorTerms[0].MatchFields {
		if req.Key == NodeNameField && req.Operator == corev1.NodeSelectorOpIn && len(req.Values) == 1 {
			return req.Values[0], true
		}
	}
	return "", false
}

// NodeSelector is the node selector the scheduler writes into an allocation of node-local devices on node.
func NodeSelector(node string) *corev1.NodeSelector {
	return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
		{Key: NodeNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}},
	}}}}
}
