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
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	cdtesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

// Named timeouts of the prepare retry spec.
const (
	// firstFailureTimeout covers scheduling and the compute-domain plugin's wait inside the prepare call
	// (the chart's readyWait, 30 s) before it gives up.
	firstFailureTimeout = time.Minute
	// resyncTimeout covers the kubelet's pod resync (60-90 s after a failed prepare) and the start of the pod.
	resyncTimeout = 2 * time.Minute
)

// The kubelet retries a failed NodePrepareResources at the pod's next resync, SyncFrequency 1 m with jitter
// factor 0.5, unless the pod object changes. The bounds allow for the second resolution of the event's and
// the container's timestamps and for the start of the pod after a prepare that succeeds.
const (
	minPrepareRetry = 59 * time.Second
	maxPrepareRetry = 92 * time.Second
)

// failedPrepareReason is the kubelet's event reason for a failed NodePrepareResources.
const failedPrepareReason = "FailedPrepareDynamicResources"

// imexDaemonSet is the chart's DaemonSet of long-lived IMEX daemons: the controller of the daemon pods.
func imexDaemonSet(ctx context.Context) types.NamespacedName {
	GinkgoHelper()
	var name string
	Eventually(ctx, func(g Gomega) {
		for _, d := range cliqueDaemons(ctx, g) {
			if owner := metav1.GetControllerOf(&d); owner != nil && owner.Kind == "DaemonSet" {
				name = owner.Name
			}
		}
		g.Expect(name).NotTo(BeEmpty(), "a long-lived IMEX daemon pod controlled by a DaemonSet")
	}).WithTimeout(podStartTimeout).Should(Succeed())
	return types.NamespacedName{Namespace: simcluster.OperatorNamespace, Name: name}
}

// updateDaemonSetAffinity applies change to the DaemonSet's pod affinity, retrying on conflicts.
func updateDaemonSetAffinity(ctx context.Context, key types.NamespacedName, change func(*corev1.Affinity)) {
	GinkgoHelper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ds, err := env.client.AppsV1().DaemonSets(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(ds.Spec.Template.Spec.Affinity)
		_, err = env.client.AppsV1().DaemonSets(key.Namespace).Update(ctx, ds, metav1.UpdateOptions{})
		return err
	})
	Expect(err).NotTo(HaveOccurred(), "update DaemonSet %s", key)
}

// notOnNode is the node selector requirement that leaves node out.
func notOnNode(node string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{node}}
}

// keepIMEXDaemonOff makes the IMEX DaemonSet leave node out, as a node selector of an operator's own would.
func keepIMEXDaemonOff(ctx context.Context, key types.NamespacedName, node string) {
	GinkgoHelper()
	updateDaemonSetAffinity(ctx, key, func(a *corev1.Affinity) {
		terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		for i := range terms {
			terms[i].MatchExpressions = append(terms[i].MatchExpressions, notOnNode(node))
		}
	})
}

// letIMEXDaemonOn undoes keepIMEXDaemonOff.
func letIMEXDaemonOn(ctx context.Context, key types.NamespacedName, node string) {
	GinkgoHelper()
	updateDaemonSetAffinity(ctx, key, func(a *corev1.Affinity) {
		terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		for i := range terms {
			terms[i].MatchExpressions = slices.DeleteFunc(terms[i].MatchExpressions, func(r corev1.NodeSelectorRequirement) bool {
				return equality.Semantic.DeepEqual(r, notOnNode(node))
			})
		}
	})
}

// failedPrepares are the pod's FailedPrepareDynamicResources events.
func failedPrepares(ctx context.Context, g Gomega, ns, pod string) []corev1.Event {
	events, err := env.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Pod,involvedObject.name=" + pod + ",reason=" + failedPrepareReason,
	})
	g.Expect(err).NotTo(HaveOccurred())
	return events.Items
}

// servingDaemonNode picks a GB200 node that is Ready and schedulable, whose long-lived IMEX daemon runs and
// whose IMEXNode is ready.
func servingDaemonNode(ctx context.Context) (node string) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		daemons := cliqueDaemons(ctx, g)
		nodes, err := env.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: cdv1beta1.CliqueNodeLabelKey})
		g.Expect(err).NotTo(HaveOccurred())
		for _, n := range nodes.Items {
			if n.Spec.Unschedulable || len(n.Spec.Taints) > 0 || readyStatus(&n) != corev1.ConditionTrue {
				continue
			}
			if d, ok := daemons[n.Name]; !ok || d.Status.Phase != corev1.PodRunning {
				continue
			}
			var record cdv1beta1.IMEXNode
			if env.crClient.Get(ctx, client.ObjectKey{Namespace: simcluster.OperatorNamespace, Name: n.Name}, &record) != nil || !record.Status.Ready {
				continue
			}
			node = n.Name
		}
		g.Expect(node).NotTo(BeEmpty(), "a Ready rack node served by its long-lived IMEX daemon")
	}).WithTimeout(podStartTimeout).Should(Succeed())
	return node
}

// expectDaemonServes waits until the node's long-lived IMEX daemon runs and its IMEXNode is ready.
func expectDaemonServes(ctx context.Context, node string) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		d, ok := cliqueDaemons(ctx, g)[node]
		g.Expect(ok).To(BeTrue(), "node %s runs a long-lived IMEX daemon", node)
		g.Expect(d.Status.Phase).To(Equal(corev1.PodRunning))
		var record cdv1beta1.IMEXNode
		g.Expect(env.crClient.Get(ctx, client.ObjectKey{Namespace: simcluster.OperatorNamespace, Name: node}, &record)).To(Succeed())
		g.Expect(record.Status.Ready).To(BeTrue(), "IMEXNode %s ready: %v", node, record.Status.Conditions)
	}).WithTimeout(podStartTimeout).Should(Succeed())
}

var _ = Describe("A ComputeDomain pod on a node whose IMEX daemon is gone", Serial, func() {
	It("waits in ContainerCreating with a FailedPrepareDynamicResources event naming the cause, and its prepare is tried again only at the kubelet's pod resync, 60-90 s later", func(ctx SpecContext) {
		cl := computeDomains()
		node := servingDaemonNode(ctx)
		daemons := imexDaemonSet(ctx)

		By("leaving " + node + " out of the IMEX DaemonSet's node affinity: the node keeps its clique label but loses its long-lived IMEX daemon")
		keepIMEXDaemonOff(ctx, daemons, node)
		DeferCleanup(func(ctx SpecContext) {
			letIMEXDaemonOn(ctx, daemons, node)
			expectDaemonServes(ctx, node)
		})
		Eventually(ctx, func(g Gomega) {
			g.Expect(cliqueDaemons(ctx, g)).NotTo(HaveKey(node))
			err := env.crClient.Get(ctx, client.ObjectKey{Namespace: simcluster.OperatorNamespace, Name: node}, &cdv1beta1.IMEXNode{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "IMEXNode %s gone with its daemon, got %v", node, err)
		}).WithTimeout(podDeleteTimeout).Should(Succeed())

		By("creating a one-node ComputeDomain and a pod with its channel on " + node)
		ns := newNamespace(ctx)
		Expect(cl.Create(ctx, cdtesting.MakeComputeDomain("broken", ns).Obj())).To(Succeed())
		pod := cdtesting.MakePod("broken-0", ns).ResourceClaim("channel", "broken-channel").Obj()
		pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
		_, err := env.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("the first prepare fails after the plugin's wait: a Warning event that names the missing daemon, the container Waiting in ContainerCreating")
		var failed corev1.Event
		Eventually(ctx, func(g Gomega) {
			events := failedPrepares(ctx, g, ns, pod.Name)
			g.Expect(events).To(HaveLen(1))
			failed = events[0]
		}).WithTimeout(firstFailureTimeout).WithPolling(200*time.Millisecond).Should(Succeed(), func() string { return podsSummary(ctx, ns) })
		Expect(failed.Type).To(Equal(corev1.EventTypeWarning))
		Expect(failed.Count).To(BeNumerically("<=", 1), "one failed prepare so far")
		Expect(failed.Message).To(SatisfyAll(
			ContainSubstring("node "+node),
			ContainSubstring(cdv1beta1.IMEXNodeReasonNoIMEXDaemon),
			ContainSubstring("the kubelet retries"),
		))
		AddReportEntry("the pod's FailedPrepareDynamicResources event", failed.Message)
		got, err := env.client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Status.Phase).To(Equal(corev1.PodPending))
		Expect(got.Status.ContainerStatuses).To(ConsistOf(HaveField("State.Waiting.Reason", "ContainerCreating")))

		By("letting the IMEX DaemonSet back on " + node + ": its daemon returns and the domain lists the node Ready with a channel")
		letIMEXDaemonOn(ctx, daemons, node)
		Eventually(ctx, func(g Gomega) {
			var cd cdv1beta1.ComputeDomain
			g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "broken"}, &cd)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(cd.Status.Conditions, cdv1beta1.ComputeDomainConditionReady)).To(BeTrue(), "conditions %v", cd.Status.Conditions)
		}).WithTimeout(domainReadyTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
		got, err = env.client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Status.Phase).To(Equal(corev1.PodPending), "the pod waits for its resync, although its domain is Ready")

		By("the pod starts at its next prepare, 60-90 s after the failed one")
		Eventually(ctx, func(g Gomega) {
			got, err = env.client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status.Phase).To(Equal(corev1.PodRunning), "containers waiting: %s", simcluster.WaitingReasons(got))
		}).WithTimeout(resyncTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
		Expect(got.Status.ContainerStatuses).To(HaveLen(1))
		started := got.Status.ContainerStatuses[0].State.Running.StartedAt
		retry := started.Sub(failed.LastTimestamp.Time)
		AddReportEntry("failed prepare → next prepare (pod started)", retry.String())
		Expect(retry).To(SatisfyAll(BeNumerically(">=", minPrepareRetry), BeNumerically("<=", maxPrepareRetry)),
			"the prepare was tried again %s after it failed (event at %s, container started at %s)", retry, failed.LastTimestamp, started)
		Eventually(ctx, func(g Gomega) {
			g.Expect(failedPrepares(ctx, g, ns, pod.Name)).To(ConsistOf(HaveField("Count", BeNumerically("<=", 1))), "the retry succeeded: still one failed prepare")
		}).Should(Succeed())
	})
})
