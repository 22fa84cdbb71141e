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

package apiserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

// beInvalid matches an HTTP 422 Invalid error from the apiserver whose message contains every part.
func beInvalid(parts ...string) OmegaMatcher {
	matchers := []OmegaMatcher{
		HaveOccurred(),
		WithTransform(apierrors.ReasonForError, Equal(metav1.StatusReasonInvalid)),
	}
	for _, p := range parts {
		matchers = append(matchers, MatchError(ContainSubstring(p)))
	}
	return SatisfyAll(matchers...)
}

var _ = Describe("ComputeDomain", func() {
	var ns string

	BeforeEach(func(ctx SpecContext) {
		ns = newNamespace(ctx)
	})

	Describe("a user creates a domain", func() {
		It("accepts a domain that names only its channel template and fills the defaults", func(ctx SpecContext) {
			// Unstructured, so that the client sends neither numNodes nor allocationMode: the server fills them.
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": v1beta1.GroupVersion.String(),
				"kind":       "ComputeDomain",
				"metadata":   map[string]any{"name": "training", "namespace": ns},
				"spec": map[string]any{
					"channel": map[string]any{"resourceClaimTemplate": map[string]any{"name": "training-channel"}},
				},
			}}
			Expect(k8s.Create(ctx, u)).To(Succeed())

			got := &v1beta1.ComputeDomain{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "training"}, got)).To(Succeed())
			want := utiltesting.MakeComputeDomain("training", ns).Channel("training-channel").
				AllocationMode(v1beta1.AllocationModeSingle).NumNodes(0).Obj().Spec
			Expect(cmp.Diff(want, got.Spec)).To(BeEmpty(), "spec (-want +got)")

			spec, _, err := unstructured.NestedMap(readUnstructured(ctx, ns, "training").Object, "spec")
			Expect(err).NotTo(HaveOccurred())
			Expect(spec).To(HaveKeyWithValue("numNodes", BeEquivalentTo(0)), "numNodes is stored, defaulted by the server")
		})

		It("accepts allocationMode All and a node count", func(ctx SpecContext) {
			cd := utiltesting.MakeComputeDomain("all", ns).AllocationMode(v1beta1.AllocationModeAll).NumNodes(18).Obj()
			Expect(k8s.Create(ctx, cd)).To(Succeed())
			Expect(cd.Spec.Channel.AllocationMode).To(Equal(v1beta1.AllocationModeAll))
			Expect(cd.Spec.NumNodes).To(BeEquivalentTo(18))
		})

		It("rejects an invalid allocationMode naming the allowed values", func(ctx SpecContext) {
			cd := utiltesting.MakeComputeDomain("bad-mode", ns).AllocationMode("Multiple").Obj()
			Expect(k8s.Create(ctx, cd)).To(beInvalid(
				"spec.channel.allocationMode", `Unsupported value: "Multiple"`, `supported values: "Single", "All"`))
		})

		It("rejects a negative numNodes", func(ctx SpecContext) {
			cd := utiltesting.MakeComputeDomain("negative", ns).NumNodes(-1).Obj()
			Expect(k8s.Create(ctx, cd)).To(beInvalid("spec.numNodes", "greater than or equal to 0"))
		})

		It("rejects a domain without a channel template name", func(ctx SpecContext) {
			cd := utiltesting.MakeComputeDomain("nameless", ns).Channel("").Obj()
			Expect(k8s.Create(ctx, cd)).To(beInvalid("spec.channel.resourceClaimTemplate.name"))
		})

		DescribeTable("rejects a channel template name that no ResourceClaimTemplate can have",
			func(ctx SpecContext, name string) {
				cd := utiltesting.MakeComputeDomain("badname", ns).Channel(name).Obj()
				Expect(k8s.Create(ctx, cd)).To(beInvalid("spec.channel.resourceClaimTemplate.name", "must be a DNS subdomain"))
			},
			Entry("upper case", "Training-Channel"),
			Entry("an underscore", "training_channel"),
			Entry("a trailing dash", "training-"),
			Entry("a slash", "team/channel"),
		)
	})

	Describe("a user edits a domain after creation", func() {
		var cd *v1beta1.ComputeDomain

		BeforeEach(func(ctx SpecContext) {
			cd = utiltesting.MakeComputeDomain("fixed", ns).NumNodes(4).Obj()
			Expect(k8s.Create(ctx, cd)).To(Succeed())
		})

		DescribeTable("rejects any change to spec with the immutability message",
			func(ctx SpecContext, edit func(*v1beta1.ComputeDomainSpec)) {
				changed := cd.DeepCopy()
				edit(&changed.Spec)
				Expect(k8s.Update(ctx, changed)).To(beInvalid("spec", "spec is immutable"),
					"the apiserver must reject a change to spec")

				stored := &v1beta1.ComputeDomain{}
				Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cd), stored)).To(Succeed())
				Expect(cmp.Diff(cd.Spec, stored.Spec)).To(BeEmpty(), "the stored spec is unchanged (-want +got)")
			},
			Entry("numNodes", func(s *v1beta1.ComputeDomainSpec) { s.NumNodes = 8 }),
			Entry("allocationMode", func(s *v1beta1.ComputeDomainSpec) { s.Channel.AllocationMode = v1beta1.AllocationModeAll }),
			Entry("the channel template name", func(s *v1beta1.ComputeDomainSpec) { s.Channel.ResourceClaimTemplate.Name = "other" }),
		)

		It("still accepts metadata changes", func(ctx SpecContext) {
			changed := cd.DeepCopy()
			changed.Labels = map[string]string{"team": "llm"}
			Expect(k8s.Update(ctx, changed)).To(Succeed())
		})
	})

	Describe("the controller writes status", func() {
		var cd *v1beta1.ComputeDomain

		BeforeEach(func(ctx SpecContext) {
			cd = utiltesting.MakeComputeDomain("status", ns).NumNodes(2).Obj()
			Expect(k8s.Create(ctx, cd)).To(Succeed())
		})

		It("round-trips nodes, cliques, counts and conditions through the status subresource", func(ctx SpecContext) {
			now := metav1.NewTime(time.Now().Truncate(time.Second))
			clique := "7b8c3e1a-0d4f-4c2e-9a1b-2f3e4d5c6b7a.1"
			w := utiltesting.MakeComputeDomain("status", ns).
				StatusValue(v1beta1.ComputeDomainStatusReady).
				Node(utiltesting.MakeComputeDomainNode("node-a", "10.0.0.1", clique, 0, v1beta1.ComputeDomainStatusReady)).
				Node(utiltesting.MakeComputeDomainNode("node-b", "10.0.0.2", clique, 1, v1beta1.ComputeDomainStatusReady)).
				Clique(v1beta1.ComputeDomainClique{CliqueID: clique, Channel: ptr.To[int32](3), ReadyNodes: 2, TotalNodes: 2}).
				NodeCounts(2, 2).
				ObservedGeneration(cd.Generation)
			for _, c := range []metav1.Condition{
				{Type: v1beta1.ComputeDomainConditionReady, Status: metav1.ConditionTrue, Reason: v1beta1.ComputeDomainReasonAllNodesReady, Message: "2 of 2 nodes ready"},
				{Type: v1beta1.ComputeDomainConditionDaemonsReady, Status: metav1.ConditionTrue, Reason: v1beta1.ComputeDomainReasonAllNodesReady},
				{Type: v1beta1.ComputeDomainConditionDegraded, Status: metav1.ConditionFalse, Reason: v1beta1.ComputeDomainReasonHealthy},
			} {
				c.ObservedGeneration = cd.Generation
				c.LastTransitionTime = now
				w.Condition(c)
			}
			want := w.Obj().Status

			cd.Status = *want.DeepCopy()
			Expect(k8s.Status().Update(ctx, cd)).To(Succeed())

			got := &v1beta1.ComputeDomain{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cd), got)).To(Succeed())
			Expect(cmp.Diff(want, got.Status)).To(BeEmpty(), "status (-want +got)")
			Expect(meta.IsStatusConditionTrue(got.Status.Conditions, v1beta1.ComputeDomainConditionReady)).To(BeTrue())
		})

		It("defaults status.status and each node's status to NotReady", func(ctx SpecContext) {
			cd.Status.Nodes = []v1beta1.ComputeDomainNode{{Name: "node-a", IPAddress: "10.0.0.1"}}
			Expect(k8s.Status().Update(ctx, cd)).To(Succeed())

			got := &v1beta1.ComputeDomain{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cd), got)).To(Succeed())
			Expect(got.Status.Status).To(Equal(v1beta1.ComputeDomainStatusNotReady))
			Expect(got.Status.Nodes).To(HaveLen(1))
			Expect(got.Status.Nodes[0].Status).To(Equal(v1beta1.ComputeDomainStatusNotReady))
		})

		It("rejects a node status outside Ready and NotReady", func(ctx SpecContext) {
			cd.Status.Nodes = []v1beta1.ComputeDomainNode{{Name: "node-a", Status: "Starting"}}
			Expect(k8s.Status().Update(ctx, cd)).To(beInvalid(
				"status.nodes[0].status", `Unsupported value: "Starting"`, `supported values: "Ready", "NotReady"`))
		})

		It("rejects a clique channel beyond the 2048 IMEX channels", func(ctx SpecContext) {
			cd.Status.Cliques = []v1beta1.ComputeDomainClique{{CliqueID: "c.1", Channel: ptr.To[int32](2048)}}
			Expect(k8s.Status().Update(ctx, cd)).To(beInvalid("status.cliques[0].channel", "less than or equal to 2047"))
		})

		It("rejects two nodes with the same name", func(ctx SpecContext) {
			cd.Status.Nodes = []v1beta1.ComputeDomainNode{{Name: "node-a"}, {Name: "node-a"}}
			Expect(k8s.Status().Update(ctx, cd)).To(beInvalid("status.nodes[1]", "Duplicate value"))
		})

		It("ignores status written through the main resource", func(ctx SpecContext) {
			changed := cd.DeepCopy()
			changed.Status.Status = v1beta1.ComputeDomainStatusReady
			changed.Status.ReadyNodes = 2
			Expect(k8s.Update(ctx, changed)).To(Succeed())

			got := &v1beta1.ComputeDomain{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cd), got)).To(Succeed())
			Expect(got.Status.ReadyNodes).To(BeZero())
			Expect(got.Status.Status).NotTo(Equal(v1beta1.ComputeDomainStatusReady))
		})

		It("shows Ready, ready and total nodes in kubectl get's columns", func(ctx SpecContext) {
			cd.Status = utiltesting.MakeComputeDomain("status", ns).StatusValue(v1beta1.ComputeDomainStatusNotReady).
				NodeCounts(1, 2).
				Condition(metav1.Condition{
					Type: v1beta1.ComputeDomainConditionReady, Status: metav1.ConditionFalse,
					Reason: v1beta1.ComputeDomainReasonDaemonsNotReady, Message: "node-b: IMEX daemon not ready",
					LastTransitionTime: metav1.Now(),
				}).Obj().Status
			Expect(k8s.Status().Update(ctx, cd)).To(Succeed())

			table := getTable(ns, "computedomains")
			var columns []string
			for _, c := range table.ColumnDefinitions {
				columns = append(columns, c.Name)
			}
			Expect(columns).To(Equal([]string{"Name", "Ready", "Nodes-Ready", "Nodes", "Status", "Placement", "Age"}))
			Expect(table.Rows).To(HaveLen(1))
			Expect(table.Rows[0].Cells[:5]).To(Equal([]any{"status", "False", float64(1), float64(2), "NotReady"}))
		})
	})
})

func readUnstructured(ctx SpecContext, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1beta1.GroupVersion.WithKind("ComputeDomain"))
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)).To(Succeed())
	return u
}

// getTable lists a resource of this group as kubectl get does, as a server-side Table.
func getTable(ns, resource string) *metav1.Table {
	httpClient, err := rest.HTTPClientFor(env.Config)
	Expect(err).NotTo(HaveOccurred())
	listURL, err := url.JoinPath(env.Config.Host, "apis", v1beta1.GroupVersion.String(), "namespaces", ns, resource)
	Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequest(http.MethodGet, listURL, nil)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := httpClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.StatusCode).To(Equal(http.StatusOK), listURL+": "+string(body))
	table := &metav1.Table{}
	Expect(json.Unmarshal(body, table)).To(Succeed())
	return table
}
