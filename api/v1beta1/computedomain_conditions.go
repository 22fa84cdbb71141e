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

// ComputeDomain condition types.
const (
	// ComputeDomainConditionReady is True when the domain is ready for its workload: every expected node's
	// IMEX daemon is ready and every clique holds a channel.
	ComputeDomainConditionReady = "Ready"
	// ComputeDomainConditionDaemonsReady is True when the IMEX daemons of all current nodes report ready.
	ComputeDomainConditionDaemonsReady = "DaemonsReady"
	// ComputeDomainConditionDegraded is True when a node that was ready lost its daemon or its peers.
	ComputeDomainConditionDegraded = "Degraded"
)

// ComputeDomain condition reasons. Messages name the node and the cause; reasons stay CamelCase constants.
const (
	// ComputeDomainReasonAllNodesReady: every expected node is ready.
	ComputeDomainReasonAllNodesReady = "AllNodesReady"
	// ComputeDomainReasonWaitingForNodes: fewer nodes than expected have joined the domain.
	ComputeDomainReasonWaitingForNodes = "WaitingForNodes"
	// ComputeDomainReasonDaemonsNotReady: some nodes' IMEX daemons are not ready yet.
	ComputeDomainReasonDaemonsNotReady = "DaemonsNotReady"
	// ComputeDomainReasonNoWorkload: no workload pod of the domain is prepared on any node.
	ComputeDomainReasonNoWorkload = "NoWorkload"
	// ComputeDomainReasonChannelPending: a clique of the domain has no IMEX channel yet.
	ComputeDomainReasonChannelPending = "ChannelPending"
	// ComputeDomainReasonChannelsExhausted: a clique has no free IMEX channel for the domain.
	ComputeDomainReasonChannelsExhausted = "ChannelsExhausted"
	// ComputeDomainReasonNoFabric: the domain's nodes have no multi-node NVLink fabric; claims succeed
	// with nothing injected.
	ComputeDomainReasonNoFabric = "NoFabric"
	// ComputeDomainReasonDaemonLost: a node's daemon that was ready is gone or not ready.
	ComputeDomainReasonDaemonLost = "DaemonLost"
	// ComputeDomainReasonPeersLost: a node's daemon lost connection to some of its peers.
	ComputeDomainReasonPeersLost = "PeersLost"
	// ComputeDomainReasonCliqueFull: a clique already holds the most nodes one IMEX ensemble can have
	// (18 on NVL72); the nodes over the cap get no index and do not join.
	ComputeDomainReasonCliqueFull = "CliqueFull"
	// ComputeDomainReasonClaimTemplateConflict: a ResourceClaimTemplate with the name the domain asks for
	// exists and belongs to something else; the controller does not overwrite it.
	ComputeDomainReasonClaimTemplateConflict = "ClaimTemplateConflict"
	// ComputeDomainReasonHealthy: nothing is degraded.
	ComputeDomainReasonHealthy = "Healthy"
	// ComputeDomainReasonMemberRecordRefused (an event's reason): a member record disagrees with the domain's
	// IMEX daemon pods (no daemon pod of the domain owns it, or it names another node or address than its
	// daemon pod's) and is ignored.
	ComputeDomainReasonMemberRecordRefused = "MemberRecordRefused"
)
