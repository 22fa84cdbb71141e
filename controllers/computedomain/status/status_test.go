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
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

const (
	opNS  = "nvidia-dra"
	rackA = "cluster-1.0"
	rackB = "cluster-1.1"
)

var (
	t0     = metav1.NewTime(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	t1     = metav1.NewTime(t0.Add(time.Minute))
	baseCD = utiltesting.MakeComputeDomain("job", "team-a").UID("0f3c9a7e-0000").Generation(1)
	// readyIn is a node whose daemon is ready in clique, listed by the clique's ensemble; in the empty clique,
	// a node without a multi-node fabric.
	readyIn = func(node, clique string) Node {
		if clique == "" {
			return Node{Name: node, NoFabric: true}
		}
		return inEnsemble(utiltesting.MakeIMEXNode(node, opNS).Clique(clique).IP("10.0.0." + node[len(node)-1:]).Ready())
	}
)

// inEnsemble is the node of an IMEXNode as its clique's ensemble lists it: at the index its name's last
// digit less one (n1 at 0).
func inEnsemble(w *utiltesting.IMEXNodeWrapper) Node {
	idx := int32(w.Name[len(w.Name)-1]) - '1'
	return Node{Name: w.Name, IMEX: w.Obj(), Index: &idx}
}

// cond is the part of a condition a case asserts: status/reason, and substrings its message must hold.
type cond struct {
	Status   metav1.ConditionStatus
	Reason   string
	Contains []string `json:"-"`
}

func TestCompute(t *testing.T) {
	cases := map[string]struct {
		domain       *v1beta1.ComputeDomain
		nodes        []Node
		channels     map[string]int32
		channelErrs  map[string]error
		blocker      *Blocker
		placement    *Placement
		limit        int
		wantStatus   v1beta1.ComputeDomainStatusValue
		wantNodes    []v1beta1.ComputeDomainNode
		wantCliques  []v1beta1.ComputeDomainClique
		wantCounts   [2]int32
		wantConds    map[string]cond
		skipNodeDiff bool
	}{
		"a new domain with no members waits for its workload": {
			domain:     baseCD.Clone().Obj(),
			wantStatus: v1beta1.ComputeDomainStatusNotReady,
			wantCounts: [2]int32{0, 0},
			wantConds: map[string]cond{
				"Ready":        {Status: "False", Reason: "NoWorkload"},
				"DaemonsReady": {Status: "False", Reason: "NoWorkload"},
				"Degraded":     {Status: "False", Reason: "Healthy"},
			},
		},
		"four ready daemons in one clique make the domain Ready with indices 0..3 and the clique's channel": {
			domain:   baseCD.Clone().Obj(),
			nodes:    []Node{readyIn("n4", rackA), readyIn("n2", rackA), readyIn("n1", rackA), readyIn("n3", rackA)},
			channels: map[string]int32{rackA: 3},
			wantNodes: []v1beta1.ComputeDomainNode{
				{Name: "n1", IPAddress: "10.0.0.1", CliqueID: rackA, Index: 0, Status: "Ready", LastReadyTime: &t1},
				{Name: "n2", IPAddress: "10.0.0.2", CliqueID: rackA, Index: 1, Status: "Ready", LastReadyTime: &t1},
				{Name: "n3", IPAddress: "10.0.0.3", CliqueID: rackA, Index: 2, Status: "Ready", LastReadyTime: &t1},
				{Name: "n4", IPAddress: "10.0.0.4", CliqueID: rackA, Index: 3, Status: "Ready", LastReadyTime: &t1},
			},
			wantCliques: []v1beta1.ComputeDomainClique{{CliqueID: rackA, Channel: ptr.To[int32](3), ReadyNodes: 4, TotalNodes: 4}},
			wantStatus:  v1beta1.ComputeDomainStatusReady,
			wantCounts:  [2]int32{4, 4},
			wantConds: map[string]cond{
				"Ready":        {Status: "True", Reason: "AllNodesReady", Contains: []string{rackA + ": channel 3, 4 nodes"}},
				"DaemonsReady": {Status: "True", Reason: "AllNodesReady"},
				"Degraded":     {Status: "False", Reason: "Healthy"},
			},
		},
		"a daemon still joining keeps the domain not Ready and is named, but the domain is not Degraded": {
			domain: baseCD.Clone().Obj(),
			nodes: []Node{
				readyIn("n1", rackA),
				inEnsemble(utiltesting.MakeIMEXNode("n2", opNS).Clique(rackA).NotReady("IMEXReady", "Starting", "waiting for peers file")),
			},
			channels:     map[string]int32{rackA: 1},
			skipNodeDiff: true,
			wantCliques:  []v1beta1.ComputeDomainClique{{CliqueID: rackA, Channel: ptr.To[int32](1), ReadyNodes: 1, TotalNodes: 2}},
			wantStatus:   v1beta1.ComputeDomainStatusNotReady,
			wantCounts:   [2]int32{1, 2},
			wantConds: map[string]cond{
				"Ready":        {Status: "False", Reason: "DaemonsNotReady", Contains: []string{"1 of 2", "n2"}},
				"DaemonsReady": {Status: "False", Reason: "DaemonsNotReady", Contains: []string{"node n2 (IMEXReady=False Starting: waiting for peers file)"}},
				"Degraded":     {Status: "False", Reason: "Healthy"},
			},
		},
		"a node with no trusted IMEX daemon is not ready and named with the cause NoIMEXDaemon": {
			domain:       baseCD.Clone().Obj(),
			nodes:        []Node{readyIn("n1", rackA), {Name: "n2"}},
			channels:     map[string]int32{rackA: 1},
			skipNodeDiff: true,
			wantCliques:  []v1beta1.ComputeDomainClique{{CliqueID: "", TotalNodes: 1}, {CliqueID: rackA, Channel: ptr.To[int32](1), ReadyNodes: 1, TotalNodes: 1}},
			wantStatus:   v1beta1.ComputeDomainStatusNotReady,
			wantCounts:   [2]int32{1, 2},
			wantConds: map[string]cond{
				"Ready":        {Status: "False", Reason: "DaemonsNotReady", Contains: []string{"n2"}},
				"DaemonsReady": {Status: "False", Reason: "DaemonsNotReady", Contains: []string{"node n2 (IMEXReady=False NoIMEXDaemon: no long-lived IMEX daemon reports for node n2"}},
				"Degraded":     {Status: "False", Reason: "Healthy"},
			},
		},
		"a node whose daemon is ready but that its clique's ensemble does not list yet is not ready (NotInEnsemble)": {
			domain: baseCD.Clone().Obj(),
			nodes: []Node{readyIn("n1", rackA), func() Node {
				n := readyIn("n2", rackA)
				n.Index = nil
				return n
			}()},
			channels:     map[string]int32{rackA: 1},
			skipNodeDiff: true,
			wantCliques:  []v1beta1.ComputeDomainClique{{CliqueID: rackA, Channel: ptr.To[int32](1), ReadyNodes: 1, TotalNodes: 2}},
			wantStatus:   v1beta1.ComputeDomainStatusNotReady,
			wantCounts:   [2]int32{1, 2},
			wantConds: map[string]cond{
				"Ready":        {Status: "False", Reason: "DaemonsNotReady", Contains: []string{"n2"}},
				"DaemonsReady": {Status: "False", Reason: "DaemonsNotReady", Contains: []string{"node n2 (IMEXReady=False NotInEnsemble: the IMEX ensemble of clique " + rackA + " does not list node n2 yet)"}},
				"Degraded":     {Status: "False", Reason: "Healthy"},
			},
		},
		"a node whose IMEX process died after it was ready makes the domain Degraded, naming the node and the cause": {
			domain: baseCD.Clone().
				Node(v1beta1.ComputeDomainNode{Name: "n1", CliqueID: rackA, Index: 0, Status: "Ready", LastReadyTime: &t0}).
				Node(v1beta1.ComputeDomainNode{Name: "n2", CliqueID: rackA, Index: 1, Status: "Ready", LastReadyTime: &t0}).Obj(),
			nodes: []Node{
				readyIn("n1", rackA),
				inEnsemble(utiltesting.MakeIMEXNode("n2", opNS).Clique(rackA).IP("10.0.0.2").NotReady("IMEXReady", "ProcessExited", "nvidia-imex exited with signal 9; restarting")),
			},
			channels: map[string]int32{rackA: 1},
			wantNodes: []v1beta1.ComputeDomainNode{
				{Name: "n1", IPAddress: "10.0.0.1", CliqueID: rackA, Index: 0, Status: "Ready", LastReadyTime: &t0},
				{Name: "n2", IPAddress: "10.0.0.2", CliqueID: rackA, Index: 1, Status: "NotReady", LastReadyTime: &t0},
			},
			wantCliques: []v1beta1.ComputeDomainClique{{CliqueID: rackA, Channel: ptr.To[int32](1), ReadyNodes: 1, TotalNodes: 2}},
			wantStatus:  v1beta1.ComputeDomainStatusNotReady,
			wantCounts:  [2]int32{1, 2},
			wantConds: map[string]cond{
				"Ready":        {Status: "False", Reason: "DaemonsNotReady", Contains: []string{"n2", "Degraded"}},
				"DaemonsReady": {Status: "False", Reason: "DaemonsNotReady"},
				"Degraded":     {Status: "True", Reason: "DaemonLost", Contains: []string{"node n2 (IMEXReady=False ProcessExited: nvidia-imex exited with signal 9; restarting)"}},
			},
		},
		"a degraded node stays Degraded on the next pass, after the status already says NotReady": {
			domain: baseCD.Clone().
				Node(v1beta1.ComputeDomainNode{Name: "n2", CliqueID: rackA, Index: 1, Status: "NotReady", LastReadyTime: &t0}).Obj(),
			nodes: []Node{
				inEnsemble(utiltesting.MakeIMEXNode("n2", opNS).Clique(rackA).NotReady("IMEXReady", "ProcessExited", "restarting")),
			},
			channels: map[string]int32{rackA: 1},
			wantNodes: []v1beta1.ComputeDomainNode{
				{Name: "n2", CliqueID: rackA, Index: 1, Status: "NotReady", LastReadyTime: &t0},
			},
			wantCliques: []v1beta1.ComputeDomainClique{{CliqueID: rackA, Channel: ptr.To[int32](1), TotalNodes: 1}},
			wantStatus:  v1beta1.ComputeDomainStatusNotReady,
			wantCounts:  [2]int32{0, 1},
			wantConds: map[string]cond{
				"Ready":        {Status: "False", Reason: "DaemonsNotReady"},
				"DaemonsReady": {Status: "False", Reason: "DaemonsNotReady"},
				"Degraded":     {Status: "True", Reason: "DaemonLost", Contains: []string{"node n2"}},
			},
		},
		"a recovered node keeps the time it first became ready and clears Degraded": {
			domain: baseCD.Clone().
				Node(v1beta1.ComputeDomainNode{Name: "n1", CliqueID: rackA, Index: 0, Status: "NotReady", LastReadyTime: &t0}).Obj(),
			nodes:    []Node{readyIn("n1", rackA)},
			channels: map[string]int32{rackA: 1},
			wantNodes: []v1beta1.ComputeDomainNode{
				{Name: "n1", IPAddress: "10.0.0.1", CliqueID: rackA, Index: 0, Status: "Ready", LastReadyTime: &t1},
			},
			wantCliques: []v1beta1.ComputeDomainClique{{CliqueID: rackA, Channel: ptr.To[int32](1), ReadyNodes: 1, TotalNodes: 1}},
			wantStatus:  v1beta1.ComputeDomainStatusReady,
			wantCounts:  [2]int32{1, 1},
			wantConds: map[string]cond{
				"Ready":        {Status: "True", Reason: "AllNodesReady"},
				"DaemonsReady": {Status: "True", Reason: "AllNodesReady"},
				"Degraded":     {Status: "False", Reason: "Healthy"},
			},
		},
		"a node that lost its peers but whose IMEX runs is reported as PeersLost": {
			domain: baseCD.Clone().
				Node(v1beta1.ComputeDomainNode{Name: "n1", CliqueID: rackA, Index: 0, Status: "Ready", LastReadyTime: &t0}).Obj(),
			nodes: []Node{inEnsemble(utiltesting.MakeIMEXNode("n1", opNS).Clique(rackA).
				NotReady(v1beta1.IMEXNodeConditionPeersConnected, "PeerDown", "peer 10.0.0.2 unreachable"))},
			channels:     map[string]int32{rackA: 1},
			skipNodeDiff: true,
			wantCliques:  []v1beta1.ComputeDomainClique{{CliqueID: rackA, Channel: ptr.To[int32](1), TotalNodes: 1}},
			wantStatus:   v1beta1.ComputeDomainStatusNotReady,
			wantCounts:   [2]int32{0, 1},
			wantConds: map[string]cond{
				"Ready":        {Status: "False", Reason: "DaemonsNotReady"},
				"DaemonsReady": {Status: "False", Reason: "DaemonsNotReady"},
				"Degraded":     {Status: "True", Reason: "PeersLost", Contains: []string{"node n1 (PeersConnected=False PeerDown: peer 10.0.0.2 unreachable)"}},
			},
		},
		"numNodes not reached keeps the domain waiting for nodes even when every member is ready": {
			domain:       baseCD.Clone().NumNodes(4).Obj(),
			nodes:        []Node{readyIn("n1", rackA), readyIn("n2", rackA)},
			channels:     map[string]int32{rackA: 1},
			skipNodeDiff: true,
			wantCliques:  []v1beta1.ComputeDomainClique{{CliqueID: rackA, Channel: ptr.To[int32](1), ReadyNodes: 2, TotalNodes: 2}},
			wantStatus:   v1beta1.ComputeDomainStatusNotReady,
			wantCounts:   [2]int32{2, 4},
			wantConds: map[string]cond{
				"Ready":        {Status: "False", Reason: "WaitingForNodes", Contains: []string{"2 of 4"}},
				"DaemonsReady": {Status: "True", Reason: "AllNodesReady"},
				"Degraded":     {Status: "False", Reason: "Healthy"},
			},
		},
		"a domain spanning two racks forms one ensemble per clique, each with its own channel and indices from 0": {
			domain:   baseCD.Clone().Obj(),
			nodes:    []Node{readyIn("a1", rackA), readyIn("a2", rackA), readyIn("b1", rackB)},
			channels: map[string]int32{rackA: 2, rackB: 1},
			wantNodes: []v1beta1.ComputeDomainNode{
				{Name: "a1", IPAddress: "10.0.0.1", CliqueID: rackA, Index: 0, Status: "Ready", LastReadyTime: &t1},
				{Name: "a2", IPAddress: "10.0.0.2", CliqueID: rackA, Index: 1, Status: "Ready", LastReadyTime: &t1},
				{Name: "b1", IPAddress: "10.0.0.1", CliqueID: rackB, Index: 0, Status: "Ready", LastReadyTime: &t1},
			},
			wantCliques: []v1beta1.ComputeDomainClique{
				{CliqueID: rackA, Channel: ptr.To[int32](2), ReadyNodes: 2, TotalNodes: 2},
				{CliqueID: rackB, Channel: ptr.To[int32](1), ReadyNodes: 1, TotalNodes: 1},
			},
			wantStatus: v1beta1.ComputeDomainStatusReady,
			wantCounts: [2]int32{3, 3},
			wantConds: map[string]cond{
				"Ready":        {Status: "True", Reason: "AllNodesReady", Contains: []string{rackA + ": channel 2, 2 nodes", rackB + ": channel 1, 1 nodes"}},
				"DaemonsReady": {Status: "True", Reason: "AllNodesReady"},
				"Degraded":     {Status: "False", Reason: "Healthy"},
			},
		},
		"a clique over the ensemble cap leaves the extra node out and says which": {
			domain:       baseCD.Clone().Obj(),
			nodes:        []Node{readyIn("n1", rackA), readyIn("n2", rackA), readyIn("n3", rackA)},
			channels:     map[string]int32{rackA: 1},
			limit:        2,
			skipNodeDiff: true,
			wantCliques:  []v1beta1.ComputeDomainClique{{CliqueID: rackA, Channel: ptr.To[int32](1), ReadyNodes: 2, TotalNodes: 3}},
			wantStatus:   v1beta1.ComputeDomainStatusNotReady,
			wantCounts:   [2]int32{2, 3},
			wantConds: map[string]cond{
				"Ready":        {Status: "False", Reason: "CliqueFull", Contains: []string{"clique " + rackA + " holds 2 nodes", "not joined: n3"}},
				"DaemonsReady": {Status: "True", Reason: "AllNodesReady"},
				"Degraded":     {Status: "False", Reason: "Healthy"},
			},
		},
		"a clique without a free channel is named in the Ready condition": {
			domain:       baseCD.Clone().Obj(),
			nodes:        []Node{readyIn("n1", rackA)},
			channelErrs:  map[string]error{rackA: errors.New("all 2047 channels are held by other domains")},
			skipNodeDiff: true,
			wantCliques:  []v1beta1.ComputeDomainClique{{CliqueID: rackA, ReadyNodes: 1, TotalNodes: 1}},
			wantStatus:   v1beta1.ComputeDomainStatusNotReady,
			wantCounts:   [2]int32{1, 1},
			wantConds: map[string]cond{
				"Ready":        {Status: "False", Reason: "ChannelsExhausted", Contains: []string{"clique " + rackA + ": all 2047 channels"}},
				"DaemonsReady": {Status: "True", Reason: "AllNodesReady"},
				"Degraded":     {Status: "False", Reason: "Healthy"},
			},
		},
		"nodes without a multi-node fabric make the domain Ready with no channel, and the status says so": {
			domain:       baseCD.Clone().Obj(),
			nodes:        []Node{readyIn("h1", ""), readyIn("h2", "")},
			skipNodeDiff: true,
			wantCliques:  []v1beta1.ComputeDomainClique{{CliqueID: "", ReadyNodes: 2, TotalNodes: 2}},
			wantStatus:   v1beta1.ComputeDomainStatusReady,
			wantCounts:   [2]int32{2, 2},
			wantConds: map[string]cond{
				"Ready":        {Status: "True", Reason: "NoFabric", Contains: []string{"h1, h2 have no multi-node NVLink fabric"}},
				"DaemonsReady": {Status: "True", Reason: "AllNodesReady"},
				"Degraded":     {Status: "False", Reason: "Healthy"},
			},
		},
		"a clique whose members left keeps its channel until the domain is deleted": {
			domain: baseCD.Clone().
				Clique(v1beta1.ComputeDomainClique{CliqueID: rackB, Channel: ptr.To[int32](5), TotalNodes: 1}).Obj(),
			nodes:        []Node{readyIn("a1", rackA)},
			channels:     map[string]int32{rackA: 1, rackB: 5},
			skipNodeDiff: true,
			wantCliques: []v1beta1.ComputeDomainClique{
				{CliqueID: rackA, Channel: ptr.To[int32](1), ReadyNodes: 1, TotalNodes: 1},
				{CliqueID: rackB, Channel: ptr.To[int32](5)},
			},
			wantStatus: v1beta1.ComputeDomainStatusReady,
			wantCounts: [2]int32{1, 1},
			wantConds: map[string]cond{
				"Ready":        {Status: "True", Reason: "AllNodesReady"},
				"DaemonsReady": {Status: "True", Reason: "AllNodesReady"},
				"Degraded":     {Status: "False", Reason: "Healthy"},
			},
		},
		"a blocker such as a foreign claim template keeps the domain not Ready with its reason": {
			domain:       baseCD.Clone().Obj(),
			nodes:        []Node{readyIn("n1", rackA)},
			channels:     map[string]int32{rackA: 1},
			blocker:      &Blocker{Reason: "ClaimTemplateConflict", Message: "ResourceClaimTemplate team-a/job-channel exists and is not owned by this domain"},
			skipNodeDiff: true,
			wantCliques:  []v1beta1.ComputeDomainClique{{CliqueID: rackA, Channel: ptr.To[int32](1), ReadyNodes: 1, TotalNodes: 1}},
			wantStatus:   v1beta1.ComputeDomainStatusNotReady,
			wantCounts:   [2]int32{1, 1},
			wantConds: map[string]cond{
				"Ready":        {Status: "False", Reason: "ClaimTemplateConflict", Contains: []string{"team-a/job-channel"}},
				"DaemonsReady": {Status: "True", Reason: "AllNodesReady"},
				"Degraded":     {Status: "False", Reason: "Healthy"},
			},
		},
		"a domain whose gang is in place says PlacementGuaranteed and still waits for its workload": {
			domain:     baseCD.Clone().NumNodes(4).Obj(),
			placement:  &Placement{Status: metav1.ConditionTrue, Reason: "CliqueGang", Message: "gang of 4 in one clique"},
			wantStatus: v1beta1.ComputeDomainStatusNotReady,
			wantCounts: [2]int32{0, 4},
			wantConds: map[string]cond{
				"Ready":               {Status: "False", Reason: "NoWorkload"},
				"DaemonsReady":        {Status: "False", Reason: "NoWorkload"},
				"Degraded":            {Status: "False", Reason: "Healthy"},
				"PlacementGuaranteed": {Status: "True", Reason: "CliqueGang", Contains: []string{"gang of 4"}},
			},
		},
		"a gang the scheduler cannot place makes Ready say so while no workload pod runs": {
			domain: baseCD.Clone().NumNodes(16).Obj(),
			placement: &Placement{Status: metav1.ConditionTrue, Reason: "CliqueGang", Message: "gang of 16",
				Unschedulable: "the scheduler finds no NVLink clique for the gang of 16 pods"},
			wantStatus: v1beta1.ComputeDomainStatusNotReady,
			wantCounts: [2]int32{0, 16},
			wantConds: map[string]cond{
				"Ready":               {Status: "False", Reason: "GangUnschedulable", Contains: []string{"no NVLink clique for the gang of 16"}},
				"DaemonsReady":        {Status: "False", Reason: "NoWorkload"},
				"Degraded":            {Status: "False", Reason: "Healthy"},
				"PlacementGuaranteed": {Status: "True", Reason: "CliqueGang"},
			},
		},
		"a scheduler verdict left over once the workload runs does not hide how the daemons are doing": {
			domain:   baseCD.Clone().NumNodes(1).Obj(),
			nodes:    []Node{readyIn("n1", rackA)},
			channels: map[string]int32{rackA: 2},
			placement: &Placement{Status: metav1.ConditionTrue, Reason: "CliqueGang", Message: "gang of 1",
				Unschedulable: "no clique"},
			wantNodes:   []v1beta1.ComputeDomainNode{{Name: "n1", IPAddress: "10.0.0.1", CliqueID: rackA, Index: 0, Status: "Ready", LastReadyTime: &t1}},
			wantCliques: []v1beta1.ComputeDomainClique{{CliqueID: rackA, Channel: ptr.To[int32](2), ReadyNodes: 1, TotalNodes: 1}},
			wantStatus:  v1beta1.ComputeDomainStatusReady,
			wantCounts:  [2]int32{1, 1},
			wantConds: map[string]cond{
				"Ready":               {Status: "True", Reason: "AllNodesReady"},
				"DaemonsReady":        {Status: "True", Reason: "AllNodesReady"},
				"Degraded":            {Status: "False", Reason: "Healthy"},
				"PlacementGuaranteed": {Status: "True", Reason: "CliqueGang"},
			},
		},
		"a domain refused a gang says why in PlacementGuaranteed": {
			domain:     baseCD.Clone().NumNodes(20).Obj(),
			placement:  &Placement{Status: metav1.ConditionFalse, Reason: "ExceedsClique", Message: "spec.numNodes 20 does not fit in one NVLink clique"},
			wantStatus: v1beta1.ComputeDomainStatusNotReady,
			wantCounts: [2]int32{0, 20},
			wantConds: map[string]cond{
				"Ready":               {Status: "False", Reason: "NoWorkload"},
				"DaemonsReady":        {Status: "False", Reason: "NoWorkload"},
				"Degraded":            {Status: "False", Reason: "Healthy"},
				"PlacementGuaranteed": {Status: "False", Reason: "ExceedsClique", Contains: []string{"spec.numNodes 20"}},
			},
		},
		"without a placement finding the previous PlacementGuaranteed condition stays": {
			domain: baseCD.Clone().Condition(metav1.Condition{Type: "PlacementGuaranteed", Status: metav1.ConditionFalse,
				Reason: "NumNodesUnset", ObservedGeneration: 1, LastTransitionTime: t0}).Obj(),
			wantStatus: v1beta1.ComputeDomainStatusNotReady,
			wantCounts: [2]int32{0, 0},
			wantConds: map[string]cond{
				"Ready":               {Status: "False", Reason: "NoWorkload"},
				"DaemonsReady":        {Status: "False", Reason: "NoWorkload"},
				"Degraded":            {Status: "False", Reason: "Healthy"},
				"PlacementGuaranteed": {Status: "False", Reason: "NumNodesUnset"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Compute(Input{
				Domain:            tc.domain,
				Nodes:             tc.nodes,
				Channels:          tc.channels,
				ChannelErrors:     tc.channelErrs,
				Blocker:           tc.blocker,
				Placement:         tc.placement,
				Now:               t1,
				MaxNodesPerClique: tc.limit,
			})
			if got.Status != tc.wantStatus {
				t.Errorf("status.status = %s, want %s", got.Status, tc.wantStatus)
			}
			if !tc.skipNodeDiff {
				if diff := cmp.Diff(tc.wantNodes, got.Nodes, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("nodes (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tc.wantCliques, got.Cliques, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("cliques (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCounts, [2]int32{got.ReadyNodes, got.TotalNodes}); diff != "" {
				t.Errorf("ready/total nodes (-want +got):\n%s", diff)
			}
			if got.ObservedGeneration != tc.domain.Generation {
				t.Errorf("observedGeneration = %d, want %d", got.ObservedGeneration, tc.domain.Generation)
			}
			gotConds := map[string]cond{}
			messages := map[string]string{}
			for _, c := range got.Conditions {
				gotConds[c.Type] = cond{Status: c.Status, Reason: c.Reason, Contains: tc.wantConds[c.Type].Contains}
				messages[c.Type] = c.Message
				if c.ObservedGeneration != tc.domain.Generation {
					t.Errorf("condition %s observedGeneration = %d, want %d", c.Type, c.ObservedGeneration, tc.domain.Generation)
				}
			}
			if diff := cmp.Diff(tc.wantConds, gotConds); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			for typ, want := range tc.wantConds {
				for _, sub := range want.Contains {
					if !strings.Contains(messages[typ], sub) {
						t.Errorf("condition %s message %q does not contain %q", typ, messages[typ], sub)
					}
				}
			}
		})
	}
}

func TestComputeKeepsIndicesAcrossPasses(t *testing.T) {
	// The ensemble lists n2 first at 0; n1 joins later at 1 and must keep it although it sorts first. A node
	// the ensemble does not list yet keeps the index it had in the domain's status.
	at := func(n Node, idx int32) Node {
		n.Index = &idx
		return n
	}
	cd := baseCD.Clone().Obj()
	first := Compute(Input{Domain: cd, Nodes: []Node{at(readyIn("n2", rackA), 0)}, Channels: map[string]int32{rackA: 1}, Now: t0})
	cd.Status = first
	second := Compute(Input{Domain: cd, Nodes: []Node{at(readyIn("n1", rackA), 1), at(readyIn("n2", rackA), 0)}, Channels: map[string]int32{rackA: 1}, Now: t1})
	got := map[string]int32{}
	for _, n := range second.Nodes {
		got[n.Name] = n.Index
	}
	if diff := cmp.Diff(map[string]int32{"n2": 0, "n1": 1}, got); diff != "" {
		t.Errorf("indices (-want +got):\n%s", diff)
	}
	// The Ready condition's transition time stays at the first pass's, since it stayed True.
	if a, b := readyTransition(first), readyTransition(second); !a.Equal(&b) {
		t.Errorf("Ready transition time moved from %v to %v although Ready stayed True", a, b)
	}
	cd.Status = second
	unlisted := readyIn("n1", rackA)
	unlisted.Index = nil
	third := Compute(Input{Domain: cd, Nodes: []Node{unlisted, at(readyIn("n2", rackA), 0)}, Channels: map[string]int32{rackA: 1}, Now: t1})
	for _, n := range third.Nodes {
		if n.Name == "n1" && (n.Index != 1 || n.Status != v1beta1.ComputeDomainStatusNotReady) {
			t.Errorf("n1 out of its ensemble: index %d status %s, want index 1 NotReady", n.Index, n.Status)
		}
	}
}

func readyTransition(s v1beta1.ComputeDomainStatus) metav1.Time {
	for _, c := range s.Conditions {
		if c.Type == v1beta1.ComputeDomainConditionReady {
			return c.LastTransitionTime
		}
	}
	panic(fmt.Sprintf("no Ready condition in %v", s.Conditions))
}

func TestCliques(t *testing.T) {
	nodes := []Node{readyIn("b1", rackB), readyIn("a1", rackA), readyIn("h1", ""), readyIn("a2", rackA)}
	if diff := cmp.Diff([]string{rackA, rackB}, Cliques(nodes)); diff != "" {
		t.Errorf("cliques (-want +got):\n%s", diff)
	}
}

// TestComputeCapsMessagesOfMaximumSizeNodes: twelve not-ready members whose daemons wrote the longest
// messages the API allows, on nodes with the longest names, still yield conditions the API accepts (each
// message at most v1beta1.MaxConditionMessageBytes); without the cap the DaemonsReady message was ~330 KB and
// every status write was refused.
func TestComputeCapsMessagesOfMaximumSizeNodes(t *testing.T) {
	huge := strings.Repeat("x", v1beta1.MaxConditionMessageBytes)
	var nodes []Node
	for i := range 12 {
		node := fmt.Sprintf("%s-%02d", strings.Repeat("n", 250), i)
		nodes = append(nodes, inEnsemble(utiltesting.MakeIMEXNode(node, opNS).
			Clique(rackA).IP(fmt.Sprintf("10.0.1.%d", i)).
			NotReady(v1beta1.IMEXNodeConditionIMEXReady, "IMEXNotReady", huge)))
	}
	status := Compute(Input{Domain: baseCD.Clone().NumNodes(12).Obj(), Nodes: nodes, Channels: map[string]int32{rackA: 1}, Now: t0})
	if len(status.Conditions) == 0 {
		t.Fatal("no conditions")
	}
	for _, c := range status.Conditions {
		if len(c.Message) > v1beta1.MaxConditionMessageBytes {
			t.Errorf("condition %s: message of %d bytes, over the API's %d", c.Type, len(c.Message), v1beta1.MaxConditionMessageBytes)
		}
	}
	if ready := status.Conditions; !strings.Contains(fmt.Sprint(ready), "bytes left out") {
		t.Errorf("no condition says that a member's message was cut: %v", ready)
	}
}
