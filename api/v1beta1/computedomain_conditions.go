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
	// ComputeDomainConditionPlacementGuaranteed is True when the domain's workload pods that join the domain's
	// PodGroup (spec.schedulingGroup.podGroupName: the domain's name) are placed all-or-nothing inside one
	// NVLink clique: the PodGroup is the controller's, a gang of spec.numNodes pods with a topology constraint
	// on the clique label that the API server kept, and some clique has that many nodes. False says why not.
	// Ours, not part of the compatible API.
	ComputeDomainConditionPlacementGuaranteed = "PlacementGuaranteed"
)

// Reasons of the PlacementGuaranteed condition.
const (
	// ComputeDomainReasonCliqueGang (True): the domain's PodGroup is a gang of spec.numNodes pods in one clique.
	ComputeDomainReasonCliqueGang = "CliqueGang"
	// ComputeDomainReasonWorkloadAPIUnavailable: the cluster does not serve scheduling.k8s.io/v1beta1
	// PodGroups (kube-apiserver without --runtime-config=scheduling.k8s.io/v1beta1=true and the GenericWorkload
	// gate), so no gang is made.
	ComputeDomainReasonWorkloadAPIUnavailable = "WorkloadAPIUnavailable"
	// ComputeDomainReasonTopologyUnsupported: the API server dropped the PodGroup's topology constraint
	// (TopologyAwareWorkloadScheduling off): the gang is all-or-nothing but may span cliques.
	ComputeDomainReasonTopologyUnsupported = "TopologyUnsupported"
	// ComputeDomainReasonNumNodesUnset: spec.numNodes is 0, so the gang's size is unknown and no PodGroup is made.
	ComputeDomainReasonNumNodesUnset = "NumNodesUnset"
	// ComputeDomainReasonExceedsClique: spec.numNodes is larger than every NVLink clique of the cluster (or
	// than one IMEX ensemble can hold); the domain is refused a PodGroup, so pods that name it stay unscheduled.
	ComputeDomainReasonExceedsClique = "ExceedsClique"
	// ComputeDomainReasonPodGroupConflict: a PodGroup with the domain's name exists and belongs to something
	// else; the controller does not overwrite it.
	ComputeDomainReasonPodGroupConflict = "PodGroupConflict"
	// ComputeDomainReasonPodGroupChanged: the domain's PodGroup is no longer a gang of spec.numNodes pods
	// (someone replaced it); delete it and the controller makes it again.
	ComputeDomainReasonPodGroupChanged = "PodGroupChanged"
	// ComputeDomainReasonCliqueAffinity: without the Workload API, the controller pinned the domain's pods to one
	// NVLink clique with required node affinity and released them together (the clique placement fallback).
	ComputeDomainReasonCliqueAffinity = "CliqueAffinity"
	// ComputeDomainReasonWaitingForPods: without the Workload API, fewer than spec.numNodes pods of the domain
	// are held for clique placement; they are released together once all exist.
	ComputeDomainReasonWaitingForPods = "WaitingForPods"
	// ComputeDomainReasonPodsNotHeld: the domain's held pods, or its PodGroup gang not scheduled yet, wait for
	// pods of the domain that were admitted without the pod-group webhook's mark (the API server could not call
	// it, and its failure policy is Ignore): those never join, so the others wait until those pods are deleted
	// (their controller recreates them through the webhook).
	ComputeDomainReasonPodsNotHeld = "PodsNotHeld"
	// ComputeDomainReasonNoCliqueFree: without the Workload API, no NVLink clique has spec.numNodes free nodes;
	// the domain's pods stay held until one has.
	ComputeDomainReasonNoCliqueFree = "NoCliqueFree"
	// ComputeDomainReasonSliceGang (True): a domain larger than one clique is a CompositePodGroup gang of k
	// per-slice PodGroups, each slice's pods in one NVLink clique, all slices or none.
	ComputeDomainReasonSliceGang = "SliceGang"
	// ComputeDomainReasonSliceAffinity: the controller pinned each slice of a domain larger than one clique to
	// its own NVLink clique with required node affinity and released all of them together (the clique placement
	// fallback, where the cluster serves no composite pod groups).
	ComputeDomainReasonSliceAffinity = "SliceAffinity"
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
	// ComputeDomainReasonGangUnschedulable (Ready): no workload pod runs yet and the scheduler reports that the
	// domain's gang fits in no NVLink clique now; its message is the scheduler's.
	ComputeDomainReasonGangUnschedulable = "GangUnschedulable"
	// ComputeDomainReasonHealthy: nothing is degraded.
	ComputeDomainReasonHealthy = "Healthy"
)
