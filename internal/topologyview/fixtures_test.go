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

package topologyview

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

// The fixed cluster states of the golden tests, built from plain objects as the API serves them.

const (
	operatorNamespace = "nvidia-dra"
	cliqueA           = "c0ffee00-0000-4000-8000-000000000001.0"
	cliqueB           = "c0ffee00-0000-4000-8000-000000000001.1"
	gpusPerTray       = 4
)

var fixtureTime = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// cluster builds a Snapshot.
type cluster struct{ s Snapshot }

// tray adds a GB200 tray: a Node in clique (none when empty) with its 4 GPUs published and, in a clique, a ready
// IMEX daemon.
func (c *cluster) tray(name, clique string) *cluster {
	n := utiltesting.MakeNode(name)
	if clique != "" {
		n.Clique(clique)
		c.s.IMEXNodes = append(c.s.IMEXNodes, *utiltesting.MakeIMEXNode(name, operatorNamespace).Clique(clique).Ready().Obj())
	}
	c.s.Nodes = append(c.s.Nodes, *n.Obj())
	rs := utiltesting.MakeResourceSlice(v1beta1.GPUDriverName, name)
	for i := range gpusPerTray {
		rs.Device(fmt.Sprintf("gpu-%d", i), v1beta1.DeviceTypeGpu)
	}
	c.s.ResourceSlices = append(c.s.ResourceSlices, *rs.Obj())
	return c
}

// rack adds n trays <prefix>-1 ... <prefix>-n in clique.
func (c *cluster) rack(prefix, clique string, n int) *cluster {
	for i := 1; i <= n; i++ {
		c.tray(fmt.Sprintf("%s-%d", prefix, i), clique)
	}
	return c
}

// node is the Node name, to change it.
func (c *cluster) node(name string) *corev1.Node {
	for i := range c.s.Nodes {
		if c.s.Nodes[i].Name == name {
			return &c.s.Nodes[i]
		}
	}
	panic("no node " + name)
}

// taintGPU taints GPU gpu of node as the GPU plugin's health monitor does for an Xid.
func (c *cluster) taintGPU(node, gpu, key, value string) *cluster {
	for i := range c.s.ResourceSlices {
		rs := &c.s.ResourceSlices[i]
		if *rs.Spec.NodeName != node {
			continue
		}
		for j := range rs.Spec.Devices {
			if rs.Spec.Devices[j].Name == gpu {
				rs.Spec.Devices[j].Taints = append(rs.Spec.Devices[j].Taints, resourceapi.DeviceTaint{Key: key, Value: value, Effect: resourceapi.DeviceTaintEffectNoSchedule})
			}
		}
	}
	return c
}

// imexNotReady makes node's IMEX daemon report not ready, or removes its IMEXNode when condType is empty.
func (c *cluster) imexNotReady(node, condType, reason, message string) *cluster {
	for i := range c.s.IMEXNodes {
		if c.s.IMEXNodes[i].Spec.NodeName != node {
			continue
		}
		if condType == "" {
			c.s.IMEXNodes = append(c.s.IMEXNodes[:i], c.s.IMEXNodes[i+1:]...)
			return c
		}
		w := utiltesting.IMEXNodeWrapper{IMEXNode: c.s.IMEXNodes[i]}
		c.s.IMEXNodes[i] = *w.NotReady(condType, reason, message).Obj()
	}
	return c
}

// domain adds a ComputeDomain.
func (c *cluster) domain(d *v1beta1.ComputeDomain) *cluster {
	c.s.ComputeDomains = append(c.s.ComputeDomains, *d)
	return c
}

// workloadPod adds pod name of namespace on node (unbound when empty) joining the domain through its claim
// template (none when empty), with a claim of gpus GPUs of the node allocated and reserved for it.
func (c *cluster) workloadPod(ns, name, domainTemplate, node string, gpus int) *cluster {
	p := utiltesting.MakePod(name, ns).UID(types.UID("uid-"+name)).ResourceClaim("gpus", "four-gpus")
	if domainTemplate != "" {
		p.ResourceClaim("imex-channel", domainTemplate)
	}
	phase := corev1.PodPending
	if node != "" {
		p.Node(node)
		phase = corev1.PodRunning
	}
	pod := p.Phase(phase).Obj()
	c.s.Pods = append(c.s.Pods, *pod)
	if node != "" && gpus > 0 {
		claim := utiltesting.MakeResourceClaim(name+"-gpus", ns).Request("gpus", v1beta1.GPUDriverName).AllocatedOn(node)
		for i := range gpus {
			claim.Device("gpus", v1beta1.GPUDriverName, node, fmt.Sprintf("gpu-%d", i))
		}
		c.s.ResourceClaims = append(c.s.ResourceClaims, *claim.ReservedFor(pod).Obj())
	}
	return c
}

// claim adds an allocated GPU claim that no pod reserved.
func (c *cluster) claim(ns, name, node string, gpus int) *cluster {
	claim := utiltesting.MakeResourceClaim(name, ns).Request("gpus", v1beta1.GPUDriverName).AllocatedOn(node)
	for i := range gpus {
		claim.Device("gpus", v1beta1.GPUDriverName, node, fmt.Sprintf("gpu-%d", gpusPerTray-1-i))
	}
	c.s.ResourceClaims = append(c.s.ResourceClaims, *claim.Obj())
	return c
}

// event adds an event of the domain, minutes after fixtureTime.
func (c *cluster) event(d *v1beta1.ComputeDomain, minutes int, typ, reason, message string) *cluster {
	at := metav1.NewTime(fixtureTime.Add(time.Duration(minutes) * time.Minute))
	c.s.Events = append(c.s.Events, corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%d", d.Name, minutes), Namespace: d.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "ComputeDomain", Namespace: d.Namespace, Name: d.Name, UID: d.UID},
		Type:           typ, Reason: reason, Message: message, Count: 1, LastTimestamp: at,
	})
	return c
}

func condition(typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(fixtureTime)}
}

// readyDomain is a Ready domain on nodes (indices in order) of one clique with channel.
func readyDomain(ns, name, clique string, channel int32, nodes ...string) *utiltesting.ComputeDomainWrapper {
	n := int32(len(nodes))
	d := utiltesting.MakeComputeDomain(name, ns).UID(types.UID("uid-"+name)).NumNodes(n).
		StatusValue(v1beta1.ComputeDomainStatusReady).NodeCounts(n, n).
		Clique(v1beta1.ComputeDomainClique{CliqueID: clique, Channel: ptr.To(channel), ReadyNodes: n, TotalNodes: n}).
		Slice(v1beta1.ComputeDomainSlice{Index: 0, FirstRank: 0, Size: n, CliqueID: clique, BoundPods: n, Channel: ptr.To(channel)}).
		Condition(condition(v1beta1.ComputeDomainConditionReady, metav1.ConditionTrue, v1beta1.ComputeDomainReasonAllNodesReady, fmt.Sprintf("%d of %d nodes ready", n, n))).
		Condition(condition(v1beta1.ComputeDomainConditionDegraded, metav1.ConditionFalse, v1beta1.ComputeDomainReasonHealthy, ""))
	for i, node := range nodes {
		d.Node(utiltesting.MakeComputeDomainNode(node, fmt.Sprintf("10.0.0.%d", i+1), clique, int32(i), v1beta1.ComputeDomainStatusReady))
	}
	return d
}

// busyCluster: two racks of six trays and an HGX node; team-a/train holds four trays of the first rack, a plain
// pod two GPUs of its fifth tray; team-b/infer holds two trays of the second rack, an unreserved claim one GPU of
// its third tray.
func busyCluster() *Snapshot {
	c := &cluster{}
	c.rack("rack0", cliqueA, 6).rack("rack1", cliqueB, 6).tray("hgx-1", "")
	c.domain(readyDomain("team-a", "train", cliqueA, 0, "rack0-1", "rack0-2", "rack0-3", "rack0-4").Obj())
	for i := range 4 {
		c.workloadPod("team-a", fmt.Sprintf("train-%d", i), "train-channel", fmt.Sprintf("rack0-%d", i+1), 4)
	}
	c.workloadPod("default", "solo", "", "rack0-5", 2)
	c.domain(readyDomain("team-b", "infer", cliqueB, 0, "rack1-1", "rack1-2").Obj())
	for i := range 2 {
		c.workloadPod("team-b", fmt.Sprintf("infer-%d", i), "infer-channel", fmt.Sprintf("rack1-%d", i+1), 4)
	}
	c.claim("default", "spare", "rack1-3", 1)
	return &c.s
}

// multiCliqueCluster: big/llm, 8 nodes in two slices of 4, each slice in its own rack with channel 3.
func multiCliqueCluster() *Snapshot {
	c := &cluster{}
	c.rack("rack0", cliqueA, 5).rack("rack1", cliqueB, 5)
	d := utiltesting.MakeComputeDomain("llm", "big").UID("uid-llm").NumNodes(8).SliceSize(4).
		StatusValue(v1beta1.ComputeDomainStatusReady).NodeCounts(8, 8).
		Condition(condition(v1beta1.ComputeDomainConditionReady, metav1.ConditionTrue, v1beta1.ComputeDomainReasonAllNodesReady, "8 of 8 nodes ready")).
		Condition(condition(v1beta1.ComputeDomainConditionPlacementGuaranteed, metav1.ConditionTrue, v1beta1.ComputeDomainReasonSliceGang, "2 slices of 4 pods, each in one NVLink clique, all or none"))
	for s, clique := range []string{cliqueA, cliqueB} {
		d.Clique(v1beta1.ComputeDomainClique{CliqueID: clique, Channel: ptr.To[int32](3), ReadyNodes: 4, TotalNodes: 4})
		d.Slice(v1beta1.ComputeDomainSlice{Index: int32(s), FirstRank: int32(4 * s), Size: 4, CliqueID: clique, BoundPods: 4, Channel: ptr.To[int32](3), PodGroup: fmt.Sprintf("llm-slice-%d", s)})
		for i := range 4 {
			node := fmt.Sprintf("rack%d-%d", s, i+1)
			d.Node(utiltesting.MakeComputeDomainNode(node, fmt.Sprintf("10.0.%d.%d", s, i+1), clique, int32(i), v1beta1.ComputeDomainStatusReady))
			c.workloadPod("big", fmt.Sprintf("llm-%d", 4*s+i), "llm-channel", node, 4)
		}
	}
	c.domain(d.Obj())
	c.event(d.Obj(), 1, corev1.EventTypeNormal, "ChannelAllocated", "channel 3 in clique "+cliqueA)
	c.event(d.Obj(), 2, corev1.EventTypeNormal, "ChannelAllocated", "channel 3 in clique "+cliqueB)
	c.event(d.Obj(), 3, corev1.EventTypeNormal, "Ready", "8 of 8 nodes ready")
	return &c.s
}

// unhealthyCluster: one rack where team-a/train2 holds a tray with an unhealthy GPU and a tray whose IMEX daemon
// lost its peers; of the other trays one is cordoned, one tainted NoExecute, one has no IMEX daemon, one is free.
func unhealthyCluster() *Snapshot {
	c := &cluster{}
	c.rack("rack0", cliqueA, 6)
	c.taintGPU("rack0-1", "gpu-1", "gpu.nvidia.com/xid", "48")
	c.imexNotReady("rack0-2", v1beta1.IMEXNodeConditionPeersConnected, "PeersLost", "not connected to 10.0.0.1")
	c.node("rack0-3").Spec.Unschedulable = true
	c.node("rack0-3").Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}}
	c.node("rack0-4").Spec.Taints = []corev1.Taint{{Key: "example.com/maintenance", Value: "true", Effect: corev1.TaintEffectNoExecute}}
	c.imexNotReady("rack0-5", "", "", "")
	d := utiltesting.MakeComputeDomain("train2", "team-a").UID("uid-train2").NumNodes(2).
		StatusValue(v1beta1.ComputeDomainStatusNotReady).NodeCounts(1, 2).
		Clique(v1beta1.ComputeDomainClique{CliqueID: cliqueA, Channel: ptr.To[int32](1), ReadyNodes: 1, TotalNodes: 2}).
		Node(utiltesting.MakeComputeDomainNode("rack0-1", "10.0.0.1", cliqueA, 0, v1beta1.ComputeDomainStatusReady)).
		Node(utiltesting.MakeComputeDomainNode("rack0-2", "10.0.0.2", cliqueA, 1, v1beta1.ComputeDomainStatusNotReady)).
		Condition(condition(v1beta1.ComputeDomainConditionReady, metav1.ConditionFalse, v1beta1.ComputeDomainReasonDaemonsNotReady, "1 of 2 nodes ready: rack0-2: PeersConnected PeersLost: not connected to 10.0.0.1")).
		Condition(condition(v1beta1.ComputeDomainConditionDegraded, metav1.ConditionTrue, v1beta1.ComputeDomainReasonPeersLost, "rack0-2 lost its peers"))
	c.domain(d.Obj())
	c.workloadPod("team-a", "train2-0", "train2-channel", "rack0-1", 4)
	c.workloadPod("team-a", "train2-1", "train2-channel", "rack0-2", 4)
	return &c.s
}

// blockedCluster: one rack of four trays, all held by team-a/train; team-c/waiting asks for four nodes, its pods
// are held for clique placement and no clique has four free trays.
func blockedCluster() *Snapshot {
	c := &cluster{}
	c.rack("rack0", cliqueA, 4)
	c.domain(readyDomain("team-a", "train", cliqueA, 0, "rack0-1", "rack0-2", "rack0-3", "rack0-4").Obj())
	for i := range 4 {
		c.workloadPod("team-a", fmt.Sprintf("train-%d", i), "train-channel", fmt.Sprintf("rack0-%d", i+1), 4)
	}
	d := utiltesting.MakeComputeDomain("waiting", "team-c").UID("uid-waiting").NumNodes(4).
		StatusValue(v1beta1.ComputeDomainStatusNotReady).NodeCounts(0, 4).
		Slice(v1beta1.ComputeDomainSlice{Index: 0, FirstRank: 0, Size: 4}).
		Condition(condition(v1beta1.ComputeDomainConditionReady, metav1.ConditionFalse, v1beta1.ComputeDomainReasonWaitingForNodes, "0 of 4 nodes have joined")).
		Condition(condition(v1beta1.ComputeDomainConditionPlacementGuaranteed, metav1.ConditionFalse, v1beta1.ComputeDomainReasonNoCliqueFree,
			"no NVLink clique has 4 free nodes (most free: 0 in "+cliqueA+"); the pods stay held until one has."))
	c.domain(d.Obj())
	for i := range 4 {
		c.workloadPod("team-c", fmt.Sprintf("waiting-%d", i), "waiting-channel", "", 0)
	}
	c.event(d.Obj(), 1, corev1.EventTypeNormal, "ClaimTemplateCreated", "created ResourceClaimTemplate waiting-channel")
	c.event(d.Obj(), 2, corev1.EventTypeWarning, v1beta1.ComputeDomainReasonNoCliqueFree, "no NVLink clique has 4 free nodes")
	return &c.s
}
