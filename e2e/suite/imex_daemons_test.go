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

package suite

import (
	"context"
	"fmt"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
)

// What a domain's IMEX looks like in the one design: every NVLink clique node runs the chart's long-lived IMEX
// daemon, which writes the node's IMEXNode; the controller lists the clique's trusted nodes with their indices in
// the clique's IMEXClique (the ensemble) and gives each domain a channel of its own in every clique it spans.
// A domain starts no pod and writes no object in the operator namespace.

// cliqueDaemons are the long-lived IMEX daemon pods of the chart's DaemonSet that are not being deleted, by node.
func cliqueDaemons(ctx context.Context, g Gomega) map[string]corev1.Pod {
	pods, err := env.client.CoreV1().Pods(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{LabelSelector: simcluster.CliqueDaemonSelector})
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		g.Expect(out).NotTo(HaveKey(p.Spec.NodeName), "one long-lived IMEX daemon per node, %s has two", p.Spec.NodeName)
		out[p.Spec.NodeName] = p
	}
	return out
}

// imexDaemonPods are every IMEX daemon pod of the operator namespace (long-lived or not), by UID: in the one
// design they are the long-lived ones, and a domain adds none.
func imexDaemonPods(ctx context.Context, g Gomega) map[types.UID]string {
	pods, err := env.client.CoreV1().Pods(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=" + simcluster.DaemonComponent,
	})
	g.Expect(err).NotTo(HaveOccurred())
	out := map[types.UID]string{}
	for _, p := range pods.Items {
		out[p.UID] = p.Name
	}
	return out
}

// daemonRestarts are the restart counts of the long-lived IMEX daemons' containers, by "<pod>/<container>".
func daemonRestarts(ctx context.Context, g Gomega) map[string]int32 {
	out := map[string]int32{}
	for _, d := range cliqueDaemons(ctx, g) {
		for _, cs := range d.Status.ContainerStatuses {
			out[d.Name+"/"+cs.Name] = cs.RestartCount
		}
	}
	return out
}

// expectServedByCliqueDaemons checks that every node of the domain is served by its node's long-lived IMEX daemon:
// the node's running daemon pod owns the node's IMEXNode, which is Ready at the pod's address; the clique's
// IMEXClique lists the node at that address with the index the domain's status gives it; and the domain's status
// names that address. It returns the daemon pods of the domain's nodes by node.
func expectServedByCliqueDaemons(ctx context.Context, g Gomega, ns, name string) map[string]corev1.Pod {
	var cd cdv1beta1.ComputeDomain
	g.Expect(env.crClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cd)).To(Succeed())
	g.Expect(cd.Status.Nodes).NotTo(BeEmpty(), "domain %s/%s lists its nodes", ns, name)
	daemons := cliqueDaemons(ctx, g)
	served := map[string]corev1.Pod{}
	for _, n := range cd.Status.Nodes {
		daemon, ok := daemons[n.Name]
		g.Expect(ok).To(BeTrue(), "node %s runs a long-lived IMEX daemon", n.Name)
		g.Expect(daemon.Status.Phase).To(Equal(corev1.PodRunning), "IMEX daemon %s on %s", daemon.Name, n.Name)
		served[n.Name] = daemon

		var record cdv1beta1.IMEXNode
		g.Expect(env.crClient.Get(ctx, client.ObjectKey{Namespace: simcluster.OperatorNamespace, Name: n.Name}, &record)).To(Succeed(), "IMEXNode of %s", n.Name)
		g.Expect(record.OwnerReferences).To(ContainElement(HaveField("UID", daemon.UID)), "IMEXNode %s is owned by its node's daemon pod %s", record.Name, daemon.Name)
		g.Expect(record.Spec.IPAddress).To(Equal(daemon.Status.PodIP), "IMEXNode %s has its daemon pod's address", record.Name)
		g.Expect(record.Status.Ready).To(BeTrue(), "IMEXNode %s ready: %v", record.Name, record.Status.Conditions)
		g.Expect(meta.IsStatusConditionTrue(record.Status.Conditions, cdv1beta1.IMEXNodeConditionPeersConnected)).To(BeTrue(), "IMEXNode %s connected to its peers: %v", record.Name, record.Status.Conditions)

		g.Expect(n.CliqueID).To(Equal(record.Spec.CliqueID), "node %s is in its IMEXNode's clique", n.Name)
		g.Expect(n.IPAddress).To(Equal(daemon.Status.PodIP), "the domain names node %s at its long-lived daemon's address", n.Name)
		var clique cdv1beta1.IMEXClique
		g.Expect(env.crClient.Get(ctx, client.ObjectKey{Namespace: simcluster.OperatorNamespace, Name: cdv1beta1.IMEXCliqueName(n.CliqueID)}, &clique)).To(Succeed(), "IMEXClique of clique %s", n.CliqueID)
		g.Expect(clique.Status.Nodes).To(ContainElement(SatisfyAll(
			HaveField("Name", n.Name), HaveField("IPAddress", n.IPAddress), HaveField("Index", n.Index),
		)), "the ensemble of clique %s lists node %s at %s with index %d", n.CliqueID, n.Name, n.IPAddress, n.Index)
	}
	return served
}

// expectNoPerDomainObjects checks that no pod, DaemonSet or claim template of the operator namespace carries the
// domain's UID: the long-lived daemons serve every domain, none is started for one.
func expectNoPerDomainObjects(ctx context.Context, g Gomega, uid types.UID) {
	byDomain := metav1.ListOptions{LabelSelector: cdv1beta1.ComputeDomainLabelKey + "=" + string(uid)}
	pods, err := env.client.CoreV1().Pods(simcluster.OperatorNamespace).List(ctx, byDomain)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pods.Items).To(BeEmpty(), "pods of domain %s in %s", uid, simcluster.OperatorNamespace)
	dss, err := env.client.AppsV1().DaemonSets(simcluster.OperatorNamespace).List(ctx, byDomain)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dss.Items).To(BeEmpty(), "DaemonSets of domain %s", uid)
	templates, err := env.client.ResourceV1().ResourceClaimTemplates(simcluster.OperatorNamespace).List(ctx, byDomain)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(templates.Items).To(BeEmpty(), "claim templates of domain %s in %s", uid, simcluster.OperatorNamespace)
}

// distinctIndices checks that no two nodes of the domain share an IMEX node index.
func distinctIndices(g Gomega, cd *cdv1beta1.ComputeDomain) {
	indices := map[string]string{}
	for _, n := range cd.Status.Nodes {
		key := fmt.Sprintf("%s/%d", n.CliqueID, n.Index)
		g.Expect(indices).NotTo(HaveKey(key), "nodes %s and %s share index %d in clique %s", indices[key], n.Name, n.Index, n.CliqueID)
		indices[key] = n.Name
	}
}
