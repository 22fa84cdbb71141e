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
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/cliqueplacement"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
	"github.com/computedomain-operator/computedomain-operator/internal/workloadapi"
)

// cliqueNodes are n nodes of clique c, named <c>-<i>.
func cliqueNodes(c string, n int) []client.Object {
	var out []client.Object
	for i := range n {
		out = append(out, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", c, i), Labels: map[string]string{v1beta1.CliqueNodeLabelKey: c}}})
	}
	return out
}

func TestReconcilePlacement(t *testing.T) {
	domain := func(numNodes int32) *v1beta1.ComputeDomain {
		return utiltesting.MakeComputeDomain("job", "team-a").UID(testUID).NumNodes(numNodes).Obj()
	}
	ours := func(numNodes int32, mutate func(*schedulingv1beta1.PodGroup)) client.Object {
		pg := DomainGang(domain(numNodes)).PodGroup().(*schedulingv1beta1.PodGroup)
		if mutate != nil {
			mutate(pg)
		}
		return pg
	}
	// racks is a fresh copy of two racks (the fake client writes into the objects it is given) with extra.
	racks := func(extra ...client.Object) []client.Object {
		return append(append(cliqueNodes("c.0", 18), cliqueNodes("c.1", 12)...), extra...)
	}
	hgx := func() client.Object { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "hgx-0"}} }
	cases := map[string]struct {
		numNodes     int32
		noAPI        bool
		objects      []client.Object
		maxPerClique int
		// want is the PlacementGuaranteed condition (status, reason) and substrings of its message.
		want         cond
		wantContains []string
		// wantUnschedulable is a substring of the Ready message the scheduler's verdict makes ("" for none).
		wantUnschedulable string
		// wantPodGroup is the minCount and topology key the domain's PodGroup has afterwards (nil: none).
		wantPodGroup *workloadapi.Observed
		wantRetry    bool
	}{
		"a cluster without the Workload API gets no PodGroup and says so": {
			numNodes: 4, noAPI: true, objects: racks(),
			want: cond{metav1.ConditionFalse, v1beta1.ComputeDomainReasonWorkloadAPIUnavailable}, wantContains: []string{"scheduling.k8s.io/v1beta1"},
		},
		"a domain without numNodes has no gang size": {
			numNodes: 0, objects: racks(),
			want: cond{metav1.ConditionFalse, v1beta1.ComputeDomainReasonNumNodesUnset}, wantContains: []string{"spec.numNodes is 0"},
		},
		"a 16-node domain in a cluster with an 18-node rack gets a gang of 16 on the clique label": {
			numNodes: 16, objects: racks(hgx()),
			want:         cond{metav1.ConditionTrue, v1beta1.ComputeDomainReasonCliqueGang},
			wantContains: []string{"PodGroup team-a/job", "podGroupName: job", "gang of 16"},
			wantPodGroup: &workloadapi.Observed{ControllerUID: testUID, Gang: true, MinCount: 16, TopologyKey: v1beta1.CliqueNodeLabelKey},
		},
		"a 20-node domain is placed as 2 slices of 10; without composite groups or the fallback no gang is made": {
			numNodes: 20, objects: racks(),
			want:         cond{metav1.ConditionFalse, v1beta1.ComputeDomainReasonWorkloadAPIUnavailable},
			wantContains: []string{"spec.numNodes 20 is placed as 2 slices (2 × 10)", "no gang is made"},
		},
		"a 20-node domain is refused when its slices of 10 exceed the largest rack, 8 nodes, and looked at again later": {
			numNodes: 20, objects: cliqueNodes("c.0", 8),
			want:         cond{metav1.ConditionFalse, v1beta1.ComputeDomainReasonExceedsClique},
			wantContains: []string{"spec.numNodes 20 is placed as 2 slices (2 × 10), and a slice of 10 does not fit", "c.0, has 8 nodes", "spec.sliceSize to a divisor of 20 of at most 8"},
			wantRetry:    true,
		},
		"a 16-node domain is refused when the largest rack has 12 nodes": {
			numNodes: 16, objects: cliqueNodes("c.1", 12),
			want:         cond{metav1.ConditionFalse, v1beta1.ComputeDomainReasonExceedsClique},
			wantContains: []string{"spec.numNodes 16 does not fit in one NVLink clique", "c.1, has 12 nodes"},
			wantRetry:    true,
		},
		"a 40-node domain is refused when the racks have room for only 1 of its 3 slices, and looked at again later": {
			numNodes: 40, objects: racks(),
			want:         cond{metav1.ConditionFalse, v1beta1.ComputeDomainReasonExceedsClique},
			wantContains: []string{"placed as 3 slices (14+13+13)", "room for only 1 of its slices of 14 (cliques of at least 14 nodes: 1)"},
			wantRetry:    true,
		},
		"the slice plan takes one IMEX ensemble's size as a clique's": {
			numNodes: 6, objects: racks(), maxPerClique: 4,
			want:         cond{metav1.ConditionFalse, v1beta1.ComputeDomainReasonWorkloadAPIUnavailable},
			wantContains: []string{"2 slices (2 × 3)"},
		},
		"a cluster without NVLink cliques refuses every gang": {
			numNodes: 2, objects: []client.Object{hgx()},
			want:         cond{metav1.ConditionFalse, v1beta1.ComputeDomainReasonExceedsClique},
			wantContains: []string{"no node carries the NVLink clique label"},
			wantRetry:    true,
		},
		"a user's PodGroup of the domain's name is left alone and named": {
			numNodes: 4, objects: racks(&schedulingv1beta1.PodGroup{
				ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "job"},
				Spec:       schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 2}}},
			}),
			want:         cond{metav1.ConditionFalse, v1beta1.ComputeDomainReasonPodGroupConflict},
			wantContains: []string{"PodGroup team-a/job exists and is not controlled by this ComputeDomain"},
			wantPodGroup: &workloadapi.Observed{Gang: true, MinCount: 2},
			wantRetry:    true,
		},
		"a gang size someone changed is set back to numNodes": {
			numNodes: 4, objects: racks(ours(4, func(pg *schedulingv1beta1.PodGroup) { pg.Spec.SchedulingPolicy.Gang.MinCount = 1 })),
			want:         cond{metav1.ConditionTrue, v1beta1.ComputeDomainReasonCliqueGang},
			wantPodGroup: &workloadapi.Observed{ControllerUID: testUID, Gang: true, MinCount: 4, TopologyKey: v1beta1.CliqueNodeLabelKey},
		},
		"a PodGroup whose topology constraint the API server dropped is an all-or-nothing gang without clique placement": {
			numNodes: 4, objects: racks(ours(4, func(pg *schedulingv1beta1.PodGroup) { pg.Spec.SchedulingConstraints = nil })),
			want:         cond{metav1.ConditionFalse, v1beta1.ComputeDomainReasonTopologyUnsupported},
			wantContains: []string{"TopologyAwareWorkloadScheduling"},
			wantPodGroup: &workloadapi.Observed{ControllerUID: testUID, Gang: true, MinCount: 4},
		},
		"a PodGroup the scheduler could not place keeps the guarantee and carries its verdict": {
			numNodes: 16, objects: racks(ours(16, func(pg *schedulingv1beta1.PodGroup) {
				pg.Status.Conditions = []metav1.Condition{{Type: schedulingv1beta1.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse,
					Reason: "Unschedulable", Message: "0/30 nodes are available"}}
			})),
			want:              cond{metav1.ConditionTrue, v1beta1.ComputeDomainReasonCliqueGang},
			wantUnschedulable: "Unschedulable: 0/30 nodes are available",
			wantPodGroup: &workloadapi.Observed{ControllerUID: testUID, Gang: true, MinCount: 16, TopologyKey: v1beta1.CliqueNodeLabelKey,
				Scheduled: &metav1.Condition{Type: schedulingv1beta1.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse, Reason: "Unschedulable", Message: "0/30 nodes are available"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			cd := domain(tc.numNodes)
			server := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(append(tc.objects, cd)...).Build()
			r := newTestReconciler(t, server, server)
			r.cluster.WorkloadAPI = !tc.noAPI
			if tc.maxPerClique != 0 {
				r.cfg.MaxNodesPerClique = tc.maxPerClique
			}
			s := &scope{domain: cd}
			if err := r.reconcilePlacement(ctx, s); err != nil {
				t.Fatal(err)
			}
			if s.placement == nil {
				t.Fatal("no placement finding")
			}
			if diff := cmp.Diff(tc.want, cond{Status: s.placement.Status, Reason: s.placement.Reason}); diff != "" {
				t.Errorf("PlacementGuaranteed (-want +got):\n%s", diff)
			}
			for _, want := range tc.wantContains {
				if !strings.Contains(s.placement.Message, want) {
					t.Errorf("message %q does not contain %q", s.placement.Message, want)
				}
			}
			if tc.wantUnschedulable == "" && s.placement.Unschedulable != "" || !strings.Contains(s.placement.Unschedulable, tc.wantUnschedulable) {
				t.Errorf("unschedulable %q, want one containing %q", s.placement.Unschedulable, tc.wantUnschedulable)
			}
			if got := s.retry != 0; got != tc.wantRetry {
				t.Errorf("retry %v, want a retry: %v", s.retry, tc.wantRetry)
			}
			var got *workloadapi.Observed
			pg := workloadapi.NewPodGroup()
			if err := server.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "job"}, pg); err == nil {
				obs, err := workloadapi.Observe(pg)
				if err != nil {
					t.Fatal(err)
				}
				if obs.Scheduled != nil {
					obs.Scheduled.LastTransitionTime = metav1.Time{}
				}
				got = &obs
			}
			if diff := cmp.Diff(tc.wantPodGroup, got); diff != "" {
				t.Errorf("the domain's PodGroup (-want +got):\n%s", diff)
			}
		})
	}
}

// cond is a condition's status and reason.
type cond struct {
	Status metav1.ConditionStatus
	Reason string
}

func TestDomainGangLabelsMapBackToTheDomain(t *testing.T) {
	cd := utiltesting.MakeComputeDomain("job", "team-a").UID(testUID).NumNodes(4).Obj()
	pg := DomainGang(cd).PodGroup()
	if diff := cmp.Diff(map[string]string{v1beta1.ManagedByLabelKey: v1beta1.ManagedByLabelValue, v1beta1.ComputeDomainLabelKey: testUID}, pg.GetLabels()); diff != "" {
		t.Errorf("labels the controller's cache selects by (-want +got):\n%s", diff)
	}
	reqs := domainFromAnnotations(context.Background(), pg)
	if len(reqs) != 1 || reqs[0].Namespace != "team-a" || reqs[0].Name != "job" {
		t.Errorf("the PodGroup's events map to %v, want team-a/job", reqs)
	}
	if !metav1.IsControlledBy(pg, cd) || !ptr.Deref(pg.GetOwnerReferences()[0].BlockOwnerDeletion, false) {
		t.Errorf("owner references %v, want the domain as controller", pg.GetOwnerReferences())
	}
}

func TestLargestClique(t *testing.T) {
	cases := map[string]struct {
		sizes    map[string]int
		wantSize int
		wantName string
	}{
		"no cliques":                           {sizes: nil},
		"the largest wins":                     {sizes: map[string]int{"a": 3, "b": 18, "c": 17}, wantSize: 18, wantName: "b"},
		"among equals the first name in order": {sizes: map[string]int{"z": 18, "b": 18}, wantSize: 18, wantName: "b"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			size, clique := LargestClique(tc.sizes)
			if size != tc.wantSize || clique != tc.wantName {
				t.Errorf("LargestClique = %d, %q; want %d, %q", size, clique, tc.wantSize, tc.wantName)
			}
		})
	}
}

// Without the Workload API, the placement phase reports the clique placement fallback's verdict, once the
// fallback has one for this domain object; until then the condition stays as it was. A domain no clique can
// hold is refused whatever the fallback found.
func TestReconcilePlacementReportsTheCliquePlacementVerdict(t *testing.T) {
	ctx := context.Background()
	cd := utiltesting.MakeComputeDomain("job", "team-a").UID(testUID).NumNodes(4).Obj()
	objs := append(cliqueNodes("c.0", 6), cd)
	for i := range 4 {
		objs = append(objs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("job-%d", i), Namespace: "team-a", Labels: map[string]string{v1beta1.PlacementDomainLabelKey: "job"}},
			Spec:       corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: v1beta1.CliquePlacementGate}}, Containers: []corev1.Container{{Name: "c", Image: "x"}}},
		})
	}
	server := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).Build()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	verdicts := cliqueplacement.NewVerdicts()
	r, err := NewReconciler(server, server, nil, m, testConfig(), Cluster{Placements: verdicts})
	if err != nil {
		t.Fatal(err)
	}
	s := &scope{domain: cd}
	if err := r.reconcilePlacement(ctx, s); err != nil {
		t.Fatal(err)
	}
	if s.placement == nil || s.placement.Reason != v1beta1.ComputeDomainReasonWorkloadAPIUnavailable || !strings.Contains(s.placement.Message, "no pod of the domain is held for clique placement yet") {
		t.Errorf("before the fallback looked: placement %+v, want WorkloadAPIUnavailable saying no pod is held yet", s.placement)
	}
	placer := cliqueplacement.New(cliqueplacement.Options{Client: server, APIReader: server, Pods: server, GPUDriver: v1beta1.GPUDriverName, Verdicts: verdicts})
	if _, err := placer.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(cd)}); err != nil {
		t.Fatal(err)
	}
	s = &scope{domain: cd}
	if err := r.reconcilePlacement(ctx, s); err != nil {
		t.Fatal(err)
	}
	if s.placement == nil || s.placement.Reason != v1beta1.ComputeDomainReasonCliqueAffinity || !strings.Contains(s.placement.Message, "clique c.0") {
		t.Errorf("after the fallback released the pods: placement %+v, want CliqueAffinity into c.0", s.placement)
	}
	big := cd.DeepCopy()
	big.Spec.NumNodes = 8
	s = &scope{domain: big}
	if err := r.reconcilePlacement(ctx, s); err != nil {
		t.Fatal(err)
	}
	if s.placement == nil || s.placement.Reason != v1beta1.ComputeDomainReasonExceedsClique {
		t.Errorf("8 nodes in a 6-node clique: placement %+v, want ExceedsClique", s.placement)
	}
}

// A domain's gang that waits for pods of the domain which were admitted without joining it (the API server could
// not call the pod-group webhook) waits for good: PlacementGuaranteed says PodsNotHeld and names them, looked at
// again after EscapeCheckInterval. Pods of another template, in a scheduling group of their own or finished are
// not the domain's. Once the gang is scheduled the look stops.
func TestReconcilePlacementNamesThePodsThatDidNotJoinTheGang(t *testing.T) {
	ctx := context.Background()
	cd := utiltesting.MakeComputeDomain("job", "team-a").UID(testUID).NumNodes(4).Obj()
	template := cd.Spec.Channel.ResourceClaimTemplate.Name
	pod := func(name, template string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}},
				ResourceClaims: []corev1.PodResourceClaim{{Name: "channel", ResourceClaimTemplateName: ptr.To(template)}}},
		}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	joined := func(p *corev1.Pod) {
		p.Labels = map[string]string{v1beta1.PlacementDomainLabelKey: "job"}
		workloadapi.JoinPodGroup(&p.Spec, v1beta1.ComputeDomainPodGroupName(cd))
	}
	objs := append(cliqueNodes("c.0", 6), cd,
		pod("job-0", template, joined), pod("job-1", template, joined), pod("job-2", template, joined),
		pod("other-template", "other-channel", nil),
		pod("own-group", template, func(p *corev1.Pod) { workloadapi.JoinPodGroup(&p.Spec, "mine") }),
		pod("done", template, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }))
	server := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).Build()
	r := newTestReconciler(t, server, server)
	r.cluster.WorkloadAPI = true
	reconcile := func() *scope {
		t.Helper()
		s := &scope{domain: cd}
		if err := joinErrors(r.observeWorkload(ctx, s), r.reconcilePlacement(ctx, s)); err != nil {
			t.Fatal(err)
		}
		return s
	}

	s := reconcile()
	if s.placement.Reason != v1beta1.ComputeDomainReasonCliqueGang || s.retry != 0 {
		t.Fatalf("no pod of the domain exists yet: want CliqueGang without a look; got %s, looked at again after %v: %s", s.placement.Reason, s.retry, s.placement.Message)
	}

	// The joined pods' claims, made by the ResourceClaim controller from the template: not allocated while the
	// gang waits.
	for i := range 3 {
		claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("job-%d-channel", i), Namespace: "team-a",
			Labels: map[string]string{v1beta1.WorkloadClaimLabelKey: string(cd.UID)}}}
		if err := server.Create(ctx, claim); err != nil {
			t.Fatal(err)
		}
	}
	s = reconcile()
	if s.placement.Reason != v1beta1.ComputeDomainReasonCliqueGang || s.retry != cliqueplacement.EscapeCheckInterval {
		t.Fatalf("no pod escaped the gang: want CliqueGang, looked at again after %v; got %s after %v: %s", cliqueplacement.EscapeCheckInterval, s.placement.Reason, s.retry, s.placement.Message)
	}

	if err := server.Create(ctx, pod("job-3", template, nil)); err != nil {
		t.Fatal(err)
	}
	r.escapes.Forget(client.ObjectKeyFromObject(cd)) // the next look, without waiting for EscapeCheckInterval
	s = reconcile()
	want := "the gang of PodGroup team-a/job waits for the domain's 4 pods, but pods that use its claim template " + template +
		" were admitted without joining it (the API server could not call the pod-group webhook, whose failure policy is Ignore): job-3. " +
		"Those never join the gang, which waits for them, and are scheduled one by one wherever their own affinity allows; delete them (their controller recreates them through the webhook) to have all 4 placed together, into one NVLink clique"
	if s.placement.Status != metav1.ConditionFalse || s.placement.Reason != v1beta1.ComputeDomainReasonPodsNotHeld || s.placement.Message != want ||
		s.placement.Unschedulable != want || s.retry != cliqueplacement.EscapeCheckInterval {
		t.Fatalf("placement %s=%s after %v:\n got %s\nwant %s", s.placement.Reason, s.placement.Status, s.retry, s.placement.Message, want)
	}

	pg := workloadapi.NewPodGroup()
	if err := server.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: v1beta1.ComputeDomainPodGroupName(cd)}, pg); err != nil {
		t.Fatal(err)
	}
	typed := pg.(*schedulingv1beta1.PodGroup)
	typed.Status.Conditions = []metav1.Condition{{Type: schedulingv1beta1.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue, Reason: "Scheduled", LastTransitionTime: metav1.Now()}}
	if err := server.Update(ctx, typed); err != nil { // the fake client keeps status with the object
		t.Fatal(err)
	}
	s = reconcile()
	if s.placement.Reason != v1beta1.ComputeDomainReasonCliqueGang || s.retry != 0 {
		t.Errorf("a scheduled gang is not looked at again: got %s after %v: %s", s.placement.Reason, s.retry, s.placement.Message)
	}
}
