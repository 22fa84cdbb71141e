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
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

var _ = Describe("ComputeDomainMember", func() {
	var member *v1beta1.ComputeDomainMember

	BeforeEach(func(ctx SpecContext) {
		ns := newNamespace(ctx)
		member = &v1beta1.ComputeDomainMember{
			ObjectMeta: metav1.ObjectMeta{Name: v1beta1.ComputeDomainMemberName("node-a", "0f3c9a7e-1111"), Namespace: ns},
			Spec: v1beta1.ComputeDomainMemberSpec{
				DomainUID: "0f3c9a7e-1111", DomainNamespace: ns, DomainName: "training",
				NodeName: "node-a", IPAddress: "10.0.0.1", CliqueID: "c.1",
			},
		}
		Expect(k8s.Create(ctx, member)).To(Succeed())
	})

	DescribeTable("a daemon cannot move its record to another domain or node",
		func(ctx SpecContext, edit func(*v1beta1.ComputeDomainMemberSpec), message string) {
			changed := member.DeepCopy()
			edit(&changed.Spec)
			Expect(k8s.Update(ctx, changed)).To(beInvalid(message))
		},
		Entry("domainUID", func(s *v1beta1.ComputeDomainMemberSpec) { s.DomainUID = "other" }, "domainUID is immutable"),
		Entry("nodeName", func(s *v1beta1.ComputeDomainMemberSpec) { s.NodeName = "node-b" }, "nodeName is immutable"),
	)

	It("lets the daemon update its address", func(ctx SpecContext) {
		changed := member.DeepCopy()
		changed.Spec.IPAddress = "10.0.0.9"
		Expect(k8s.Update(ctx, changed)).To(Succeed())
	})
})
