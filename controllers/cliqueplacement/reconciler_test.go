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

package cliqueplacement

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/status"
	"github.com/computedomain-operator/computedomain-operator/internal/allocation"
	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
	"github.com/computedomain-operator/computedomain-operator/internal/sliceplan"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

// freeCapacityFixture is three cliques of four nodes, a, b and c, and a node without a clique; GPUs are
// allocated on a0 and a1.
func freeCapacityFixture() ([]metav1.PartialObjectMetadata, []resourcev1.ResourceClaim) {
	var nodes []metav1.PartialObjectMetadata
	for _, c := range []string{"a", "b", "c"} {
		for i := range 4 {
			nodes = append(nodes, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: c + strconv.Itoa(i), Labels: map[string]string{TopologyKey: c}}})
		}
	}
	nodes = append(nodes, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "cpu-0", Labels: map[string]string{}}})
	claims := []resourcev1.ResourceClaim{
		gpuClaimOn("a0", v1beta1.GPUDriverName),
		gpuClaimOn("a1", v1beta1.GPUDriverName),
		// A channel claim alone does not make a node busy, nor a claim not yet allocated.
		gpuClaimOn("b0", v1beta1.ComputeDomainDriverName),
		{},
	}
	return nodes, claims
}

func gpuClaimOn(node, driver string) resourcev1.ResourceClaim {
	return resourcev1.ResourceClaim{Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{
		Devices:      resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{Driver: driver, Pool: node, Device: "gpu-0"}}},
		NodeSelector: allocation.NodeSelector(node),
	}}}
}

// domainPod is a pod of domain "gang" in team-a: released into clique (held when clique is ""), bound to
// node when node is set, with completion index rank when rank >= 0.
type domainPod struct {
	clique, node string
	rank         int
	phase        corev1.PodPhase
	domain       string
}

func (d domainPod) pod() corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Labels: map[string]string{v1beta1.PlacementDomainLabelKey: cmpOr(d.domain, "gang")},
		Annotations: map[string]string{}}}
	if d.clique == "" {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: v1beta1.CliquePlacementGate}}
	} else {
		p.Annotations[v1beta1.PlacementCliqueAnnotationKey] = d.clique
	}
	if d.rank >= 0 {
		p.Labels[sliceplan.JobCompletionIndex] = strconv.Itoa(d.rank)
	}
	p.Spec.NodeName = d.node
	p.Status.Phase = d.phase
	return p
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// TestFreeCapacity: a clique's free nodes are its nodes less those with an allocated GPU and those the slices
// released into it still take: every pod of the slice not started yet, released or still held (a release cut
// short between its pod writes must not leave the rest of the slice's nodes to the next domain), and the picks
// the live read does not show yet.
func TestFreeCapacity(t *testing.T) {
	held := domainPod{rank: -1}
	released := func(clique string) domainPod { return domainPod{clique: clique, rank: -1} }
	bound := func(clique, node string) domainPod { return domainPod{clique: clique, node: node, rank: -1} }
	for name, tc := range map[string]struct {
		numNodes int32
		pods     []domainPod
		busy     []string
		inFlight map[domainKey]map[string]int
		want     Capacity
	}{
		"nothing placed: only allocated GPUs take nodes": {
			numNodes: 4, want: Capacity{"a": 2, "b": 4, "c": 4},
		},
		"all held: nothing is taken before the pick": {
			numNodes: 4, pods: []domainPod{held, held, held, held}, want: Capacity{"a": 2, "b": 4, "c": 4},
		},
		"a release cut short after one pod: the slice takes all four nodes of its clique": {
			numNodes: 4, pods: []domainPod{released("c"), held, held, held}, want: Capacity{"a": 2, "b": 4, "c": 0},
		},
		"bound pods are counted by their claims, the rest of the slice by the release": {
			numNodes: 4, pods: []domainPod{bound("c", "c0"), bound("c", "c1"), released("c"), released("c")}, busy: []string{"c0", "c1"},
			want: Capacity{"a": 2, "b": 4, "c": 0},
		},
		"finished pods free their nodes and are not run again": {
			numNodes: 4, pods: []domainPod{{clique: "c", node: "c0", rank: -1, phase: corev1.PodSucceeded}, {clique: "c", node: "c1", rank: -1, phase: corev1.PodSucceeded}, released("c"), released("c")},
			want: Capacity{"a": 2, "b": 4, "c": 2},
		},
		"a replacement for a failed pod takes one node more": {
			numNodes: 4, pods: []domainPod{bound("c", "c0"), bound("c", "c1"), bound("c", "c2"), {clique: "c", node: "c3", rank: -1, phase: corev1.PodFailed}, released("c")},
			busy: []string{"c0", "c1", "c2"}, want: Capacity{"a": 2, "b": 4, "c": 0},
		},
		"slices of a sliced domain take their own cliques": {
			numNodes: 8, pods: []domainPod{{clique: "b", rank: 0}, {rank: 1}, {rank: 2}, {rank: 3}, {clique: "c", rank: 4}, {clique: "c", rank: 5}, {rank: 6}, {rank: 7}},
			want: Capacity{"a": 2, "b": 0, "c": 0},
		},
		"a pick the live read does not show yet takes its slice": {
			numNodes: 4, pods: []domainPod{held, held, held, held}, inFlight: map[domainKey]map[string]int{{"team-a", "gang"}: {"b": 4}},
			want: Capacity{"a": 2, "b": 0, "c": 4},
		},
		"a pick shown by the live read is not counted twice": {
			numNodes: 4, pods: []domainPod{bound("b", "b1"), released("b"), held, held}, busy: []string{"b1"},
			inFlight: map[domainKey]map[string]int{{"team-a", "gang"}: {"b": 4}}, want: Capacity{"a": 2, "b": 0, "c": 4},
		},
		"pods of a domain that does not exist, or into a clique no node carries, take nothing": {
			numNodes: 4, pods: []domainPod{{clique: "c", rank: -1, domain: "forged"}, released("nowhere")},
			inFlight: map[domainKey]map[string]int{{"team-a", "forged"}: {"c": 4}}, want: Capacity{"a": 2, "b": 4, "c": 4},
		},
		"a domain takes at most spec.numNodes less its bound pods, whatever pods its tenant adds": {
			numNodes: 2, pods: []domainPod{bound("c", "c0"), released("c"), released("c"), released("c")}, busy: []string{"c0"},
			want: Capacity{"a": 2, "b": 4, "c": 2},
		},
	} {
		t.Run(name, func(t *testing.T) {
			nodes, claims := freeCapacityFixture()
			for _, n := range tc.busy {
				claims = append(claims, gpuClaimOn(n, v1beta1.GPUDriverName))
			}
			var pods []corev1.Pod
			for _, d := range tc.pods {
				pods = append(pods, d.pod())
			}
			managed := managedDomains([]v1beta1.ComputeDomain{*utiltesting.MakeComputeDomain("gang", "team-a").NumNodes(tc.numNodes).Obj()}, 4)
			free := freeCapacity(nodes, claims, v1beta1.GPUDriverName, pods, managed, tc.inFlight)
			if !maps.Equal(free, tc.want) {
				t.Errorf("free %v, want %v", free, tc.want)
			}
		})
	}
}

func TestPick(t *testing.T) {
	free := Capacity{"a": 2, "b": 4, "c": 3}
	for need, clique := range map[int]string{2: "a", 3: "c", 4: "b", 5: ""} {
		if got := free.pick(need); got != clique {
			t.Errorf("pick(%d) = %q, want %q: the tightest clique that holds them (%v)", need, got, clique, free)
		}
	}
	if s := free.String(); s != "free nodes per clique: a: 2, b: 4, c: 3" {
		t.Errorf("message %q", s)
	}
}

func TestPinToClique(t *testing.T) {
	own := corev1.NodeSelectorRequirement{Key: "example.com/pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"x"}}
	pod := &corev1.Pod{}
	pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/other"}, {Name: v1beta1.CliquePlacementGate}}
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{own}}, {}},
	}}}
	got := pinToClique(pod, "cluster.7")
	if len(got.Spec.SchedulingGates) != 1 || got.Spec.SchedulingGates[0].Name != "example.com/other" {
		t.Errorf("gates %v: want only the pod's own", got.Spec.SchedulingGates)
	}
	if len(pod.Spec.SchedulingGates) != 2 {
		t.Errorf("the input pod was changed: %v", pod.Spec.SchedulingGates)
	}
	terms := got.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i, term := range terms {
		last := term.MatchExpressions[len(term.MatchExpressions)-1]
		if last.Key != TopologyKey || len(last.Values) != 1 || last.Values[0] != "cluster.7" {
			t.Errorf("term %d: %v, want the clique ANDed in", i, term.MatchExpressions)
		}
	}
	if len(terms[0].MatchExpressions) != 2 || terms[0].MatchExpressions[0].Key != own.Key {
		t.Errorf("the pod's own requirement is kept: %v", terms[0].MatchExpressions)
	}
	if got.Annotations[v1beta1.PlacementCliqueAnnotationKey] != "cluster.7" {
		t.Errorf("annotations %v", got.Annotations)
	}
	bare := pinToClique(&corev1.Pod{Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: v1beta1.CliquePlacementGate}}}}, "c")
	if bare.Spec.SchedulingGates == nil || len(bare.Spec.SchedulingGates) != 0 {
		t.Errorf("gates %#v: want an empty list", bare.Spec.SchedulingGates)
	}
	if n := len(bare.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms); n != 1 {
		t.Errorf("a pod without node affinity gets one term, got %d", n)
	}
}

// placementFixture is a reconciler of the fallback over a fake API: 3 cliques of 6 nodes, with the GPUs of some
// nodes allocated, and a domain of 4 nodes whose pods the test creates.
type placementFixture struct {
	t      *testing.T
	r      *Reconciler
	c      client.Client
	domain *v1beta1.ComputeDomain
}

func newPlacementFixture(t *testing.T, busy map[string]int) *placementFixture {
	t.Helper()
	return newFixture(t, []string{"a", "b", "c"}, 6, busy, 4)
}

// newFixture is a cluster of the named cliques of perClique nodes each, busy[clique] of them with a GPU
// allocated, and a domain of numNodes nodes whose pods the test creates.
func newFixture(t *testing.T, cliques []string, perClique int, busy map[string]int, numNodes int32) *placementFixture {
	t.Helper()
	scheme, err := kubescheme.New()
	if err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for _, clique := range cliques {
		for i := range perClique {
			name := fmt.Sprintf("%s%d", clique, i)
			objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{TopologyKey: clique}}})
			if i < busy[clique] {
				objs = append(objs, &resourcev1.ResourceClaim{
					ObjectMeta: metav1.ObjectMeta{Name: "busy-" + name, Namespace: "other"},
					Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{
						Devices:      resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{Driver: v1beta1.GPUDriverName, Pool: name, Device: "gpu-0"}}},
						NodeSelector: allocation.NodeSelector(name),
					}},
				})
			}
		}
	}
	cd := utiltesting.MakeComputeDomain("gang", "team-a").Channel("gang-channel").NumNodes(numNodes).Obj()
	cd.UID = "uid-gang"
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&resourcev1.ResourceClaim{}).Build()
	r := New(Options{Client: c, APIReader: c, Pods: c, GPUDriver: v1beta1.GPUDriverName, Verdicts: NewVerdicts(), MaxNodesPerClique: perClique})
	return &placementFixture{t: t, r: r, c: c, domain: cd}
}

// pod creates a pod of the domain as the webhook leaves it: held, or released into clique.
func (f *placementFixture) pod(name, releasedTo string) {
	f.t.Helper()
	f.rankedPod(name, -1, releasedTo)
}

// rankedPod is pod with an Indexed Job's completion index rank (none when negative).
func (f *placementFixture) rankedPod(name string, rank int, releasedTo string) {
	f.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.domain.Namespace, Labels: map[string]string{
		v1beta1.PlacementDomainLabelKey: v1beta1.PlacementDomainLabelValue(f.domain.Name),
	}}}
	if rank >= 0 {
		p.Labels[sliceplan.JobCompletionIndex] = strconv.Itoa(rank)
	}
	p.Spec.Containers = []corev1.Container{{Name: "c", Image: "x"}}
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: v1beta1.CliquePlacementGate}}
	if releasedTo != "" {
		p = pinToClique(p, releasedTo)
	}
	if err := f.c.Create(context.Background(), p); err != nil {
		f.t.Fatal(err)
	}
}

// reconcile runs the fallback once and returns the placement it found and where each pod of the domain's
// namespace is: its clique, or "held".
func (f *placementFixture) reconcile() (*status.Placement, map[string]string) {
	f.t.Helper()
	placement, _, err := f.r.place(context.Background(), f.domain)
	if err != nil {
		f.t.Fatal(err)
	}
	var pods corev1.PodList
	if err := f.c.List(context.Background(), &pods, client.InNamespace(f.domain.Namespace)); err != nil {
		f.t.Fatal(err)
	}
	where := map[string]string{}
	for _, p := range pods.Items {
		switch {
		case held(&p):
			where[p.Name] = "held"
		default:
			where[p.Name] = p.Annotations[v1beta1.PlacementCliqueAnnotationKey]
			terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			if last := terms[0].MatchExpressions[len(terms[0].MatchExpressions)-1]; last.Values[0] != where[p.Name] {
				f.t.Errorf("pod %s: annotation says clique %s, node affinity %v", p.Name, where[p.Name], last.Values)
			}
		}
	}
	return &placement, where
}

func TestCliquePlacementHoldsUntilAllPodsExistThenReleasesThemIntoTheTightestClique(t *testing.T) {
	// Free: a 2, b 4, c 5: b holds 4 most tightly.
	f := newPlacementFixture(t, map[string]int{"a": 4, "b": 2, "c": 1})
	for i := range 3 {
		f.pod(fmt.Sprintf("p%d", i), "")
	}
	placement, where := f.reconcile()
	if placement.Reason != v1beta1.ComputeDomainReasonWaitingForPods || len(where) != 3 || where["p0"] != "held" || where["p1"] != "held" || where["p2"] != "held" {
		t.Fatalf("3 of 4 pods: want all held and WaitingForPods, got %s %v", placement.Reason, where)
	}
	f.pod("p3", "")
	placement, where = f.reconcile()
	if placement.Reason != v1beta1.ComputeDomainReasonCliqueAffinity || !strings.Contains(placement.Message, "clique b") {
		t.Errorf("placement %s: %s", placement.Reason, placement.Message)
	}
	for p, c := range where {
		if c != "b" {
			t.Errorf("pod %s in %q, want every pod released into clique b: %v", p, c, where)
		}
	}
}

// A controller killed after releasing some pods leaves the pick on them: the rest follow into the same clique,
// though a fresh pick would now choose another (the released pods not yet bound count against their clique).
func TestCliquePlacementAfterAKillBetweenReleasesFinishesInTheSameClique(t *testing.T) {
	f := newPlacementFixture(t, map[string]int{"a": 2, "b": 0, "c": 0})
	f.pod("p0", "b")
	f.pod("p1", "b")
	f.pod("p2", "")
	f.pod("p3", "")
	// A fresh pick would see a 4, b 4 (6 less 2 released), c 6, and choose a. The reconciler is new, as after a
	// restart: it holds no pick in memory.
	_, where := f.reconcile()
	for p, c := range where {
		if c != "b" {
			t.Errorf("pod %s in %q, want the held pods to follow the released ones into b: %v", p, c, where)
		}
	}
}

// A release cut short (a conflict on one pod's write, or a kill) leaves the rest of the slice held: its clique's
// nodes stay the slice's, so the next domain's pick goes elsewhere and no two domains share the clique's room.
func TestCliquePlacementOfTheNextDomainLeavesAPartlyReleasedSliceItsRoom(t *testing.T) {
	// Free: a 5, b 6, c 6. The first domain's pick was a (tightest); one of its pods is released there.
	f := newPlacementFixture(t, map[string]int{"a": 1})
	ctx := context.Background()
	if err := f.c.Create(ctx, f.domain); err != nil {
		t.Fatal(err)
	}
	f.pod("first-0", "a")
	for i := 1; i < 4; i++ {
		f.pod(fmt.Sprintf("first-%d", i), "")
	}
	next := utiltesting.MakeComputeDomain("next", "team-b").Channel("next-channel").NumNodes(4).Obj()
	next.UID = "uid-next"
	if err := f.c.Create(ctx, next); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("next-%d", i), Namespace: "team-b",
			Labels: map[string]string{v1beta1.PlacementDomainLabelKey: "next"}}}
		p.Spec.Containers = []corev1.Container{{Name: "c", Image: "x"}}
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: v1beta1.CliquePlacementGate}}
		if err := f.c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// a has 5 free nodes less the first domain's 4: 1. Counting only its one released pod would leave 4 there,
	// the tightest fit for the next domain, and the first domain's other 3 pods would find no node.
	placement, _, err := f.r.place(ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	if placement.Reason != v1beta1.ComputeDomainReasonCliqueAffinity || !strings.Contains(placement.Message, "clique b") {
		t.Errorf("next domain: %s: %s; want it released into b (a: 1 free, b: 6, c: 6)", placement.Reason, placement.Message)
	}
	_, where := f.reconcile()
	for p, c := range where {
		if c != "a" {
			t.Errorf("pod %s in %q, want the first domain's held pods to follow its released one into a: %v", p, c, where)
		}
	}
}

// A pick whose pods the live read does not show released yet (the writes are in flight, or the read lags)
// holds its clique for the next domain's pick.
func TestCliquePlacementOfTheNextDomainLeavesAPickInFlightItsRoom(t *testing.T) {
	f := newPlacementFixture(t, map[string]int{"a": 2})
	ctx := context.Background()
	if err := f.c.Create(ctx, f.domain); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		f.pod(fmt.Sprintf("first-%d", i), "")
	}
	// The first domain picked a (free 4, the tightest) a moment ago; none of its writes shows yet.
	f.r.picks.Store(f.domain.UID, newPick(f.domain, sliceplan.Plan{Slices: []sliceplan.Slice{{Size: 4}}}, map[int]string{0: "a"}))
	free, err := readCapacity(ctx, f.c, f.c, v1beta1.GPUDriverName, 6, map[domainKey]map[string]int{{"team-a", "gang"}: {"a": 4}})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Capacity{"a": 0, "b": 6, "c": 6}); !maps.Equal(free, want) {
		t.Errorf("free %v, want %v", free, want)
	}
	picked, _, err := f.r.pickCliques(ctx, "uid-next", []sliceplan.Slice{{Size: 4}}, map[int]string{})
	if err != nil {
		t.Fatal(err)
	}
	if picked[0] != "b" {
		t.Errorf("the next domain's pick %v, want b: a's room is the first domain's", picked)
	}
}

func TestCliquePlacementKeepsEveryPodHeldWhileNoCliqueHasRoom(t *testing.T) {
	f := newPlacementFixture(t, map[string]int{"a": 3, "b": 3, "c": 3})
	for i := range 4 {
		f.pod(fmt.Sprintf("p%d", i), "")
	}
	placement, where := f.reconcile()
	if placement.Reason != v1beta1.ComputeDomainReasonNoCliqueFree || placement.Unschedulable == "" ||
		!strings.Contains(placement.Message, "free nodes per clique: a: 3, b: 3, c: 3") {
		t.Errorf("placement %+v", placement)
	}
	for p, c := range where {
		if c != "held" {
			t.Errorf("pod %s released into %q while no clique has room", p, c)
		}
	}
}

// A domain's name may be longer than a label value: its pods carry the hashed value the webhook gives them,
// and the fallback finds them by it, releases them, and maps their events back to the domain.
func TestCliquePlacementOfALongNamedDomain(t *testing.T) {
	f := newPlacementFixture(t, map[string]int{})
	f.domain.Name = strings.Repeat("trainer.", 31) + "gang"
	if err := f.c.Create(context.Background(), f.domain); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		f.pod(fmt.Sprintf("p%d", i), "")
	}
	placement, where := f.reconcile()
	if placement.Reason != v1beta1.ComputeDomainReasonCliqueAffinity {
		t.Errorf("placement %s: %s; want the long-named domain's pods released", placement.Reason, placement.Message)
	}
	for p, c := range where {
		if c == "held" {
			t.Errorf("pod %s still held: %v", p, where)
		}
	}
	var pod corev1.Pod
	if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: f.domain.Namespace, Name: "p0"}, &pod); err != nil {
		t.Fatal(err)
	}
	reqs := f.r.domainOfPod(context.Background(), &pod)
	if len(reqs) != 1 || reqs[0].Name != f.domain.Name || reqs[0].Namespace != f.domain.Namespace {
		t.Errorf("the pod's event maps to %v, want its domain %s", reqs, client.ObjectKeyFromObject(f.domain))
	}
}

// A tenant's pods that look released (the placement label, a placementClique annotation, unbound, ungated)
// take no node from other tenants' domains unless the controller released them for a domain it manages: the
// pod's label names an existing domain of its namespace with spec.numNodes, and such a domain's unbound pods
// take at most its spec.numNodes nodes less those of its pods already bound. (That only the controller writes
// the annotation is the chart's placement-mark policy: charts TestPlacementMarkPolicy.)
func TestCliquePlacementCountsOnlyPodsReleasedForDomainsItManages(t *testing.T) {
	f := newPlacementFixture(t, map[string]int{})
	ctx := context.Background()
	domains := []*v1beta1.ComputeDomain{
		utiltesting.MakeComputeDomain("tiny", "mallory").Channel("tiny-channel").NumNodes(2).Obj(),
		utiltesting.MakeComputeDomain("elastic", "mallory").Channel("elastic-channel").Obj(),
		f.domain,
	}
	for _, cd := range domains {
		if err := f.c.Create(ctx, cd); err != nil {
			t.Fatal(err)
		}
	}
	lookReleased := func(name, domain, clique, node string) {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "mallory",
			Labels:      map[string]string{v1beta1.PlacementDomainLabelKey: domain},
			Annotations: map[string]string{v1beta1.PlacementCliqueAnnotationKey: clique},
		}}
		p.Spec.Containers = []corev1.Container{{Name: "c", Image: "x"}}
		p.Spec.NodeName = node
		if err := f.c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// 18 pods of no domain, 6 in each clique: every clique read 0 free.
	for _, clique := range []string{"a", "b", "c"} {
		for i := range 6 {
			lookReleased(fmt.Sprintf("ghost-%s%d", clique, i), "ghost", clique, "")
		}
	}
	// A domain of 2 nodes, one pod bound, with 5 unbound pods heading for a: one node more, not five.
	lookReleased("tiny-bound", "tiny", "a", "a5")
	for i := range 5 {
		lookReleased(fmt.Sprintf("tiny-%d", i), "tiny", "a", "")
	}
	// A domain without spec.numNodes is never held, so never released: its pods take nothing here.
	for i := range 6 {
		lookReleased(fmt.Sprintf("elastic-%d", i), "elastic", "b", "")
	}
	// A clique no node carries is not a clique.
	lookReleased("nowhere", "tiny", "nowhere", "")

	free, err := FreeCapacity(ctx, f.r.client, f.r.apiReader, f.r.gpuDriver, f.r.maxPerClique)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Capacity{"a": 5, "b": 6, "c": 6}); !maps.Equal(free, want) {
		t.Errorf("free capacity %v, want %v", free, want)
	}
	for i := range 4 {
		f.pod(fmt.Sprintf("p%d", i), "")
	}
	placement, where := f.reconcile()
	if placement.Reason != v1beta1.ComputeDomainReasonCliqueAffinity || !strings.Contains(placement.Message, "clique a") {
		t.Errorf("placement %s: %s; want the gang released into a", placement.Reason, placement.Message)
	}
	for p, c := range where {
		if strings.HasPrefix(p, "p") && c != "a" {
			t.Errorf("pod %s in %q, want a: %v", p, c, where)
		}
	}
}

// A domain no clique has room for looks again later each time, 2 s doubling up to a minute, instead of
// listing the cluster's claims and pods every 2 s while it waits; once placed, it starts from 2 s again.
func TestReconcileBacksOffWhileNoCliqueHasRoom(t *testing.T) {
	f := newPlacementFixture(t, map[string]int{"a": 3, "b": 3, "c": 3})
	ctx := context.Background()
	if err := f.c.Create(ctx, f.domain); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		f.pod(fmt.Sprintf("p%d", i), "")
	}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.domain)}
	var got []time.Duration
	for range 8 {
		res, err := f.r.Reconcile(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res.RequeueAfter)
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute, time.Minute}
	if !slices.Equal(got, want) {
		t.Errorf("looks again after %v, want %v", got, want)
	}
	if placement, _ := f.r.verdicts.Placement(f.domain); placement.Reason != v1beta1.ComputeDomainReasonNoCliqueFree {
		t.Fatalf("verdict %+v, want NoCliqueFree", placement)
	}
	if err := f.c.DeleteAllOf(ctx, &resourcev1.ResourceClaim{}, client.InNamespace("other")); err != nil {
		t.Fatal(err)
	}
	if res, err := f.r.Reconcile(ctx, req); err != nil || res.RequeueAfter != 0 {
		t.Errorf("once a clique frees: %+v, %v; want the pods released and no retry", res, err)
	}
	if d := f.r.noCliqueBackoff.When(req.NamespacedName); d != 2*time.Second {
		t.Errorf("after the release the backoff starts at %v, want 2s again", d)
	}
}

// notHeldPod creates a pod of the namespace that uses template without the webhook having held it (the API
// server could not call the webhook, whose failure policy is Ignore): no placement label, no gate.
func (f *placementFixture) notHeldPod(name, template string, tweak func(*corev1.Pod)) {
	f.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.domain.Namespace}}
	p.Spec.Containers = []corev1.Container{{Name: "c", Image: "x"}}
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "channel", ResourceClaimTemplateName: &template}}
	p.Status.Phase = corev1.PodRunning
	if tweak != nil {
		tweak(p)
	}
	if err := f.c.Create(context.Background(), p); err != nil {
		f.t.Fatal(err)
	}
}

// Pods of the domain that the webhook never held (it could not be called) leave the held ones waiting for pods
// that never come: the verdict says so, names them and what to do, instead of "once all exist" for good. Pods
// that use another template, run in a scheduling group of their own or have finished are not the domain's
// missing pods. Once the pod not held is replaced by a held one, the domain is released as usual.
func TestCliquePlacementNamesThePodsOfTheDomainThatWereNotHeld(t *testing.T) {
	f := newPlacementFixture(t, nil)
	for i := range 3 {
		f.pod(fmt.Sprintf("p%d", i), "")
	}
	template := f.domain.Spec.Channel.ResourceClaimTemplate.Name
	f.notHeldPod("other-template", "other-channel", nil)
	f.notHeldPod("own-group", template, func(p *corev1.Pod) {
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("mine")}
	})
	f.notHeldPod("done", template, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })

	placement, retry, err := f.r.place(context.Background(), f.domain)
	if err != nil {
		t.Fatal(err)
	}
	if placement.Reason != v1beta1.ComputeDomainReasonWaitingForPods || retry != EscapeCheckInterval {
		t.Fatalf("no pod of the domain escaped: want WaitingForPods, looked at again after %v; got %s after %v: %s", EscapeCheckInterval, placement.Reason, retry, placement.Message)
	}

	f.notHeldPod("p3", template, nil)
	f.r.escapes.forgetAll() // the next look, without waiting for EscapeCheckInterval
	placement, retry, err = f.r.place(context.Background(), f.domain)
	if err != nil {
		t.Fatal(err)
	}
	want := "3 of the domain's 4 pods are held for clique placement, but pods that use its claim template gang-channel were admitted without being held (the API server could not call the pod-group webhook, whose failure policy is Ignore): p3. " +
		"Those will never be held, so the held pods are not released; delete them (their controller recreates them through the webhook) to have all 4 placed together, into one NVLink clique"
	if placement.Reason != v1beta1.ComputeDomainReasonPodsNotHeld || placement.Message != want || placement.Unschedulable != want || retry != EscapeCheckInterval {
		t.Fatalf("placement %s after %v:\n got %s\nwant %s", placement.Reason, retry, placement.Message, want)
	}
	for i := range 3 {
		var p corev1.Pod
		if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: "team-a", Name: fmt.Sprintf("p%d", i)}, &p); err != nil {
			t.Fatal(err)
		}
		if !held(&p) {
			t.Errorf("pod %s released while a pod of the domain was not held", p.Name)
		}
	}

	// The user deletes p3; its Job recreates it through the webhook, held: all four are released together.
	if err := f.c.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "p3"}}); err != nil {
		t.Fatal(err)
	}
	f.pod("p3", "")
	placement, _, err = f.r.place(context.Background(), f.domain)
	if err != nil {
		t.Fatal(err)
	}
	if placement.Reason != v1beta1.ComputeDomainReasonCliqueAffinity {
		t.Errorf("after p3 came back held: placement %s: %s", placement.Reason, placement.Message)
	}
}
