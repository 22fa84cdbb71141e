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

package computedomain_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

var _ = Describe("ComputeDomain controller restarted in the middle of a formation", func() {
	// The restarted controller holds nothing of its predecessor in memory: the channels and the indices come
	// from the API (the domains' statuses, the IMEXCliques, the IMEXNodes).
	It("yields the same channels for a 32-node domain as an uninterrupted formation, and the ensembles' indices", func() {
		ctx := context.Background()
		namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "restart-"}}
		Expect(k8s.Create(ctx, namespace)).To(Succeed())
		ns := namespace.Name
		racks := []string{"7a11.20", "7a11.21", "7a11.22", "7a11.23"}
		// join adds the members of nodes first..last-1 of every rack, in the same order for both domains.
		join := func(cd *v1beta1.ComputeDomain, prefix string, octet, first, last int) {
			for n := first; n < last; n++ {
				for r, rack := range racks {
					joinNode(ctx, cd, utiltesting.MakeIMEXNode(fmt.Sprintf("%s-r%d-n%02d", prefix, r, n), operatorNamespace).Clique(rack).
						IP(fmt.Sprintf("127.%d.%d.%d", octet, r, n+1)).Ready())
				}
			}
		}
		indices := func(cd *v1beta1.ComputeDomain, prefix string) map[string]int32 {
			got := &v1beta1.ComputeDomain{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cd), got)).To(Succeed())
			out := map[string]int32{}
			for _, n := range got.Status.Nodes {
				out[n.Name[len(prefix):]] = n.Index
			}
			return out
		}

		// One NVL72 rack holds 18 nodes: each domain takes 8 trays of each of the four racks.
		By("forming one domain uninterrupted")
		steady := createDomain(ctx, "steady", ns)
		join(steady, "s", 20, 0, 8)
		readyChannels(ctx, steady, 32)

		By("forming another, half of its nodes before a restart of the controller and half after")
		restarted := createDomain(ctx, "restarted", ns)
		join(restarted, "k", 21, 0, 4)
		before := readyChannels(ctx, restarted, 16)
		halfway := indices(restarted, "k")
		stop()
		startController()
		join(restarted, "k", 21, 4, 8)
		after := readyChannels(ctx, restarted, 32)

		Expect(after).To(Equal(before), "the restart moved a channel")
		final := indices(restarted, "k")
		for node, idx := range halfway {
			Expect(final).To(HaveKeyWithValue(node, idx), "the restart moved node %s's index", node)
		}
		got := &v1beta1.ComputeDomain{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(restarted), got)).To(Succeed())
		for _, n := range got.Status.Nodes {
			Expect(n.Index).To(Equal(ensembleIndices(ctx, n.CliqueID)[n.Name]), "node %s's index is not its ensemble's", n.Name)
		}
		steadyChannels := readyChannels(ctx, steady, 32)
		for rack, ch := range after {
			Expect(steadyChannels[rack]).NotTo(Equal(ch), "two live domains share channel %d in clique %s", ch, rack)
		}
	})
})
