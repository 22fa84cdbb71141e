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

package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
	"github.com/computedomain-operator/computedomain-operator/internal/sliceplan"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
	"github.com/computedomain-operator/computedomain-operator/internal/workloadapi"
)

// podUsing is a pod of namespace team-a with one claim from each template.
func podUsing(templates ...string) *corev1.Pod {
	p := &corev1.Pod{}
	p.Namespace = "team-a"
	for i, tmpl := range templates {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: string(rune('a' + i)), ResourceClaimTemplateName: ptr.To(tmpl)})
	}
	return p
}

func TestPodGroupJoiner(t *testing.T) {
	joined := func(p *corev1.Pod, group string) *corev1.Pod {
		workloadapi.JoinPodGroup(&p.Spec, group)
		return p
	}
	domains := []client.Object{
		utiltesting.MakeComputeDomain("gang", "team-a").Channel("gang-channel").NumNodes(16).Obj(),
		utiltesting.MakeComputeDomain("elastic", "team-a").Channel("elastic-channel").Obj(),
		utiltesting.MakeComputeDomain("elsewhere", "team-b").Channel("other-channel").NumNodes(4).Obj(),
	}
	cases := map[string]struct {
		pod       *corev1.Pod
		wantGroup string
	}{
		"an NVIDIA-style pod with a GPU claim and the domain's channel claim joins the domain's PodGroup": {
			pod: podUsing("four-gpus", "gang-channel"), wantGroup: "gang",
		},
		"a pod of a domain without numNodes gets no PodGroup, which would never come": {
			pod: podUsing("elastic-channel"),
		},
		"a template of a domain in another namespace is not this pod's": {
			pod: podUsing("other-channel"),
		},
		"a pod without a domain's template is left alone": {
			pod: podUsing("four-gpus"),
		},
		"a pod that names its own scheduling group keeps it": {
			pod: joined(podUsing("gang-channel"), "mine"), wantGroup: "mine",
		},
	}
	scheme, err := kubescheme.New()
	if err != nil {
		t.Fatal(err)
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(domains...).WithIndex(domains[0], ClaimTemplateField, ClaimTemplateOf).Build()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := tc.pod.DeepCopy()
			if err := (podGroupJoiner{domains: reader, placement: Placement{WorkloadAPI: true, CompositePodGroups: true, MaxNodesPerClique: 18}}).Default(context.Background(), p); err != nil {
				t.Fatal(err)
			}
			if got := workloadapi.PodGroupName(&p.Spec); got != tc.wantGroup {
				t.Errorf("podGroupName %q, want %q", got, tc.wantGroup)
			}
		})
	}
}

func TestPodGroupJoinerWithoutWorkloadAPIHoldsPodsForTheirClique(t *testing.T) {
	scheme, err := kubescheme.New()
	if err != nil {
		t.Fatal(err)
	}
	domains := []client.Object{
		utiltesting.MakeComputeDomain("gang", "team-a").Channel("gang-channel").NumNodes(16).Obj(),
		utiltesting.MakeComputeDomain("elastic", "team-a").Channel("elastic-channel").Obj(),
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(domains...).WithIndex(domains[0], ClaimTemplateField, ClaimTemplateOf).Build()
	joiner := podGroupJoiner{domains: reader, placement: Placement{MaxNodesPerClique: 18}}
	held := func(p *corev1.Pod) bool {
		for _, g := range p.Spec.SchedulingGates {
			if g.Name == v1beta1.CliquePlacementGate {
				return true
			}
		}
		return false
	}
	newPod := func(tmpl string) *corev1.Pod {
		p := &corev1.Pod{}
		p.Namespace = "team-a"
		p.Labels = map[string]string{"app": "mine"}
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/other"}}
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr.To("four-gpus")}, {Name: "channel", ResourceClaimTemplateName: ptr.To(tmpl)}}
		return p
	}

	p := newPod("gang-channel")
	if err := joiner.Default(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if !held(p) || p.Labels[v1beta1.PlacementDomainLabelKey] != "gang" || p.Labels["app"] != "mine" || len(p.Spec.SchedulingGates) != 2 {
		t.Errorf("a pod of a domain with numNodes: want our gate next to its own and the domain label next to its own, got gates %v labels %v", p.Spec.SchedulingGates, p.Labels)
	}
	if workloadapi.PodGroupName(&p.Spec) != "" {
		t.Errorf("no PodGroup without the Workload API, got %q", workloadapi.PodGroupName(&p.Spec))
	}
	// Admission may run twice (reinvocation): the gate is not added again.
	if err := joiner.Default(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if len(p.Spec.SchedulingGates) != 2 {
		t.Errorf("second admission: gates %v, want ours once", p.Spec.SchedulingGates)
	}

	elastic := newPod("elastic-channel")
	if err := joiner.Default(context.Background(), elastic); err != nil {
		t.Fatal(err)
	}
	if held(elastic) || elastic.Labels[v1beta1.PlacementDomainLabelKey] != "" {
		t.Errorf("a pod of a domain without numNodes is not held (no gang size to release it at): gates %v labels %v", elastic.Spec.SchedulingGates, elastic.Labels)
	}
}

// A domain's name may have 253 characters, a label value 63: the pods of a long-named domain are held with a
// label value that fits (the API server refuses the pod otherwise, naming a label the user never set), one
// that no other domain's pods carry, and the one the controller lists them by.
func TestPodGroupJoinerHoldsPodsOfALongNamedDomainWithALabelValueThatFits(t *testing.T) {
	scheme, err := kubescheme.New()
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("trainer.", 31) + "gang"
	sibling := strings.Repeat("trainer.", 31) + "gbng"
	domains := []client.Object{
		utiltesting.MakeComputeDomain(long, "team-a").Channel("long-channel").NumNodes(4).Obj(),
		utiltesting.MakeComputeDomain(sibling, "team-a").Channel("sibling-channel").NumNodes(4).Obj(),
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(domains...).WithIndex(domains[0], ClaimTemplateField, ClaimTemplateOf).Build()
	labelOf := func(tmpl string) string {
		t.Helper()
		p := &corev1.Pod{}
		p.Namespace = "team-a"
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "channel", ResourceClaimTemplateName: ptr.To(tmpl)}}
		if err := (podGroupJoiner{domains: reader, placement: Placement{MaxNodesPerClique: 18}}).Default(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		return p.Labels[v1beta1.PlacementDomainLabelKey]
	}
	got := labelOf("long-channel")
	if errs := validation.IsValidLabelValue(got); len(errs) != 0 {
		t.Errorf("the pod of a %d-character domain name is labeled %q: %v", len(long), got, errs)
	}
	if got == "" || got == labelOf("sibling-channel") {
		t.Errorf("two long domain names that differ past 63 characters label their pods alike: %q", got)
	}
	if got != v1beta1.PlacementDomainLabelValue(long) {
		t.Errorf("label %q, want %q (the value the controller lists the domain's pods by)", got, v1beta1.PlacementDomainLabelValue(long))
	}
	if short := v1beta1.PlacementDomainLabelValue("gang"); short != "gang" {
		t.Errorf("a name that fits is the label value itself, got %q", short)
	}
}

// A domain larger than one clique: each pod with a rank joins its slice's PodGroup where the cluster serves
// composite groups; every other pod of it is held for the controller, which places held pods slice by slice.
func TestPodGroupJoinerGivesEachRankItsSlicePodGroup(t *testing.T) {
	scheme, err := kubescheme.New()
	if err != nil {
		t.Fatal(err)
	}
	big := utiltesting.MakeComputeDomain("big", "team-a").Channel("big-channel").NumNodes(64).Obj()
	odd := utiltesting.MakeComputeDomain("odd", "team-a").Channel("odd-channel").NumNodes(40).Obj()
	odd.Spec.SliceSize = 20
	domains := []client.Object{big, odd}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(domains...).WithIndex(domains[0], ClaimTemplateField, ClaimTemplateOf).Build()
	composite := Placement{WorkloadAPI: true, CompositePodGroups: true, MaxNodesPerClique: 18}
	noComposite := Placement{WorkloadAPI: true, MaxNodesPerClique: 18}
	ranked := func(tmpl string, labels map[string]string) *corev1.Pod {
		p := &corev1.Pod{}
		p.Namespace = "team-a"
		p.Labels = labels
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "channel", ResourceClaimTemplateName: ptr.To(tmpl)}}
		return p
	}
	index := func(i string) map[string]string { return map[string]string{sliceplan.JobCompletionIndex: i} }
	cases := map[string]struct {
		placement Placement
		pod       *corev1.Pod
		wantGroup string
		wantHeld  bool
	}{
		"rank 0 joins the first slice":                     {placement: composite, pod: ranked("big-channel", index("0")), wantGroup: "big-slice-0"},
		"rank 15 is the first slice's last":                {placement: composite, pod: ranked("big-channel", index("15")), wantGroup: "big-slice-0"},
		"rank 16 opens the second slice":                   {placement: composite, pod: ranked("big-channel", index("16")), wantGroup: "big-slice-1"},
		"rank 63 is the last slice's":                      {placement: composite, pod: ranked("big-channel", index("63")), wantGroup: "big-slice-3"},
		"a LeaderWorkerSet worker index is a rank":         {placement: composite, pod: ranked("big-channel", map[string]string{sliceplan.LWSWorkerIndex: "40"}), wantGroup: "big-slice-2"},
		"a pod without a rank is held for the controller":  {placement: composite, pod: ranked("big-channel", nil), wantHeld: true},
		"a rank past spec.numNodes is held":                {placement: composite, pod: ranked("big-channel", index("64")), wantHeld: true},
		"a rank that is no number is held":                 {placement: composite, pod: ranked("big-channel", index("x")), wantHeld: true},
		"without composite groups every pod is held":       {placement: noComposite, pod: ranked("big-channel", index("3")), wantHeld: true},
		"a plan the controller refuses holds its pods too": {placement: composite, pod: ranked("odd-channel", index("3")), wantHeld: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := tc.pod.DeepCopy()
			if err := (podGroupJoiner{domains: reader, placement: tc.placement}).Default(context.Background(), p); err != nil {
				t.Fatal(err)
			}
			if got := workloadapi.PodGroupName(&p.Spec); got != tc.wantGroup {
				t.Errorf("podGroupName %q, want %q", got, tc.wantGroup)
			}
			held := len(p.Spec.SchedulingGates) == 1 && p.Spec.SchedulingGates[0].Name == v1beta1.CliquePlacementGate
			if held != tc.wantHeld {
				t.Errorf("held %v, want %v (gates %v)", held, tc.wantHeld, p.Spec.SchedulingGates)
			}
			if p.Labels[v1beta1.PlacementDomainLabelKey] == "" {
				t.Error("a placed pod carries its domain's label, for the domain's slices")
			}
		})
	}
}

// One `kubectl apply -f` creates a domain and its pods a moment apart: the first pod may reach the webhook
// before the domain reaches its cache. Admitted without the domain's PodGroup while the others join it, that
// pod never counts towards the gang's minCount and the others wait for good. The webhook asks the API server
// when the cache knows no domain for the pod's templates.
func TestPodGroupJoinerFindsADomainItsCacheHasNotSeenYet(t *testing.T) {
	scheme, err := kubescheme.New()
	if err != nil {
		t.Fatal(err)
	}
	gang := utiltesting.MakeComputeDomain("gang", "team-a").Channel("gang-channel").NumNodes(2).Obj()
	staleCache := fake.NewClientBuilder().WithScheme(scheme).WithIndex(gang, ClaimTemplateField, ClaimTemplateOf).Build()
	apiServer := &countingReader{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(gang,
		utiltesting.MakeComputeDomain("elastic", "team-a").Channel("elastic-channel").Obj()).Build()}
	joiner := podGroupJoiner{domains: staleCache, live: apiServer, placement: Placement{WorkloadAPI: true, MaxNodesPerClique: 18}}

	p := podUsing("four-gpus", "gang-channel")
	if err := joiner.Default(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if got := workloadapi.PodGroupName(&p.Spec); got != "gang" || p.Labels[v1beta1.PlacementDomainLabelKey] != "gang" {
		t.Errorf("pod of a domain not yet cached: podGroupName %q labels %v, want the domain's PodGroup and label", got, p.Labels)
	}
	for _, tmpl := range []string{"four-gpus", "elastic-channel"} {
		p := podUsing(tmpl)
		if err := joiner.Default(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		if got := workloadapi.PodGroupName(&p.Spec); got != "" || len(p.Labels) != 0 {
			t.Errorf("pod with template %s: podGroupName %q labels %v, want it left alone", tmpl, got, p.Labels)
		}
	}
	if apiServer.lists != 3 {
		t.Errorf("%d live lists for three pods none of whose domains is cached, want 3", apiServer.lists)
	}

	// A pod of a domain the cache knows costs no live list.
	warmCache := fake.NewClientBuilder().WithScheme(scheme).WithObjects(gang).WithIndex(gang, ClaimTemplateField, ClaimTemplateOf).Build()
	cached := podGroupJoiner{domains: warmCache, live: apiServer, placement: joiner.placement}
	apiServer.lists = 0
	if err := cached.Default(context.Background(), podUsing("gang-channel")); err != nil {
		t.Fatal(err)
	}
	if apiServer.lists != 0 {
		t.Errorf("%d live lists for a pod of a cached domain, want 0", apiServer.lists)
	}

	// An API server that cannot answer refuses the pod, naming why, rather than admitting it outside its gang.
	failing := podGroupJoiner{domains: staleCache, live: failingReader{}, placement: joiner.placement}
	err = failing.Default(context.Background(), podUsing("gang-channel"))
	if err == nil || !strings.Contains(err.Error(), "gang-channel") || !strings.Contains(err.Error(), "team-a") {
		t.Errorf("live list failing: err %v, want one naming the template and the namespace", err)
	}
}

// A webhook whose own credentials the API server refuses (a process whose pod was deleted under it) answers with
// its own error naming what failed, not with the API server's 401, which reads as the requester's credentials
// being refused.
func TestPodGroupHandlerAnswersALiveListRefusedWithItsOwnError(t *testing.T) {
	scheme, err := kubescheme.New()
	if err != nil {
		t.Fatal(err)
	}
	gang := utiltesting.MakeComputeDomain("gang", "team-a").NumNodes(2).Obj()
	staleCache := fake.NewClientBuilder().WithScheme(scheme).WithIndex(gang, ClaimTemplateField, ClaimTemplateOf).Build()
	refused := apierrors.NewUnauthorized("Unauthorized")
	h := PodGroupHandler(scheme, staleCache, failingReader{err: refused}, Placement{WorkloadAPI: true, MaxNodesPerClique: 18})
	pod := podUsing("gang-channel")
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	resp := h.(*admission.Webhook).Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: "team-a", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
	}})
	if resp.Allowed {
		t.Fatal("a pod whose domain could not be looked up was admitted")
	}
	if resp.Result == nil || resp.Result.Code != http.StatusInternalServerError || resp.Result.Reason != metav1.StatusReasonInternalError {
		t.Errorf("result %+v, want code 500, reason InternalError", resp.Result)
	}
	if resp.Result == nil {
		return
	}
	for _, want := range []string{"computedomain-operator pod webhook", "gang-channel", "team-a", "Unauthorized", "create it again"} {
		if !strings.Contains(resp.Result.Message, want) {
			t.Errorf("message %q does not say %q", resp.Result.Message, want)
		}
	}
}

// countingReader counts the List calls it passes on.
type countingReader struct {
	client.Reader
	lists int
}

func (r *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.lists++
	return r.Reader.List(ctx, list, opts...)
}

// failingReader is an API server that does not answer (err, or a refused connection).
type failingReader struct {
	client.Reader
	err error
}

func (r failingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	if r.err != nil {
		return r.err
	}
	return errors.New("connection refused")
}
