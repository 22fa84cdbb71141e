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

// ChannelReady tells whether the domain's status lists node Ready in clique cliqueID and that clique
// holds a channel, and returns the channel: the condition under which the compute-domain kubelet
// plugin hands the channel to a workload (and the node's IMEX daemon has nothing left to wait for).
func (cd *ComputeDomain) ChannelReady(node, cliqueID string) (int32, bool) {
	ready := false
	for _, n := range cd.Status.Nodes {
		if n.Name == node && n.CliqueID == cliqueID && n.Status == ComputeDomainStatusReady {
			ready = true
		}
	}
	if !ready {
		return 0, false
	}
	for _, c := range cd.Status.Cliques {
		if c.CliqueID == cliqueID && c.Channel != nil {
			return *c.Channel, true
		}
	}
	return 0, false
}
