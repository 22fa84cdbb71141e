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
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"
	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
)

// Named timeouts of the suite.
const (
	clusterStartTimeout = 3 * time.Minute
	podStartTimeout     = time.Minute
	podDeleteTimeout    = time.Minute
	jobTimeout          = 2 * time.Minute
	// nodeNotReadyTimeout covers the simulated node-monitor grace period
	// plus the controller's monitor period.
	nodeNotReadyTimeout = time.Minute
	simGracePeriod      = 8 * time.Second
)

// testEnv is the cluster under test.
type testEnv struct {
	client kubernetes.Interface
	// crClient reads, lists, watches and deletes the typed resource.nvidia.com kinds
	// (ComputeDomain, IMEXNode, IMEXClique) through the operator's own scheme.
	crClient   client.WithWatch
	restConfig *rest.Config
	applier    *simcluster.Applier
	repoRoot   string
	// sim is the simulated cluster; nil against E2E_KUBECONFIG.
	sim *simcluster.Cluster
}

var env testEnv

func TestE2E(t *testing.T) {
	// controller-runtime logs a few things through its process-global logger: to klog, not dropped with a warning.
	ctrllog.SetLogger(klog.Background())
	RegisterFailHandler(Fail)
	RunSpecs(t, "computedomain-operator e2e")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var err error
	env.repoRoot, err = simcluster.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	if path := os.Getenv("E2E_KUBECONFIG"); path != "" {
		By("using the cluster of E2E_KUBECONFIG " + path)
		env.restConfig, err = clientcmd.BuildConfigFromFlags("", path)
		Expect(err).NotTo(HaveOccurred())
	} else {
		By("starting a simulated cluster with ComputeDomains: 1 GB200 rack of 12 nodes, 1 H100 node, 1 A100 MIG node")
		startCtx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
		defer cancel()
		env.sim, err = simcluster.Start(startCtx, simcluster.Config{
			Topology: topology.Topology{
				// 12 trays: the ComputeDomain specs need whole trays (4 + 2) while
				// other specs hold GPUs and one tray loses its node agent.
				Profile: "gb200-nvl72", Racks: 1, NodesPerRack: 12,
				Extra: []topology.NodePool{{Profile: "hgx-h100-8", Count: 1}, {Profile: "a100-40gb-mig", Count: 1}},
			},
			NodeMonitorGracePeriod: simGracePeriod,
			RunDuration:            2 * time.Second,
			ComputeDomains:         true,
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(env.sim.Stop)
		env.restConfig = env.sim.RESTConfig()
	}
	env.client, err = kubernetes.NewForConfig(env.restConfig)
	Expect(err).NotTo(HaveOccurred())
	scheme, err := kubescheme.New()
	Expect(err).NotTo(HaveOccurred())
	// Our kinds have no protobuf encoding (the simulated cluster's admin configuration asks for protobuf).
	crConfig := rest.CopyConfig(env.restConfig)
	crConfig.ContentType = runtime.ContentTypeJSON
	env.crClient, err = client.NewWithWatch(crConfig, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	env.applier, err = simcluster.NewApplier(env.restConfig)
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(clusterStartTimeout+30*time.Second))

// requireSimulated skips a spec that needs the simulated node agent's
// internals as a whole (stopping a kubelet).
func requireSimulated(what string) {
	if env.sim == nil {
		Skip("node-agent internals (" + what + ") are only observable in the simulated cluster")
	}
}

// simulatedChecks reports whether the remaining checks of a spec, which read
// node-agent internals (host-root files, recorded CDI edits), can run. On
// another cluster it records that they were skipped and the spec passes on
// the checks it made before.
func simulatedChecks(what string) bool {
	if env.sim != nil {
		return true
	}
	msg := "skipped: node-agent internals (" + what + ") are only observable in the simulated cluster"
	By(msg)
	AddReportEntry("skipped checks", msg)
	return false
}

// newNamespace creates a namespace for one spec and deletes it afterwards.
func newNamespace(ctx context.Context) string {
	ns, err := env.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		_ = env.client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// createFixture creates the objects of a demo manifest in ns.
func createFixture(ctx context.Context, ns, manifest string) {
	_, err := env.applier.CreateFromFile(ctx, ns, env.repoRoot+"/"+manifest)
	Expect(err).NotTo(HaveOccurred(), "create %s", manifest)
}

// runningPod waits for a pod to be Running and returns it.
func runningPod(ctx context.Context, ns, name string) *corev1.Pod {
	var pod *corev1.Pod
	Eventually(ctx, func(g Gomega) {
		var err error
		pod, err = env.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning), func() string {
			return fmt.Sprintf("pod %s/%s conditions %v, containers waiting: %s", ns, name, pod.Status.Conditions, simcluster.WaitingReasons(pod))
		})
		// The namespace's events are listed once, when the wait fails, not on every poll that finds the pod not
		// yet running.
	}).WithTimeout(podStartTimeout).WithPolling(50*time.Millisecond).Should(Succeed(), func() string { return simcluster.PodWarnings(ctx, env.client, ns) })
	return pod
}

// podsSummary describes the pods of a namespace for failure messages.
func podsSummary(ctx context.Context, ns string) string {
	return simcluster.PodsSummary(ctx, env.client, ns)
}

// computeDomains returns the client for ComputeDomains and the IMEX kinds, or skips the spec when the
// cluster has none installed.
func computeDomains() client.WithWatch {
	GinkgoHelper()
	if _, err := env.client.Discovery().ServerResourcesForGroupVersion(cdv1beta1.GroupVersion.String()); err != nil {
		Skip("ComputeDomains are not installed in this cluster: " + err.Error())
	}
	return env.crClient
}
