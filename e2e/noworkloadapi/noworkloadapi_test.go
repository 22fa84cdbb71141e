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

package noworkloadapi

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
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
	clusterStartTimeout = 2 * time.Minute
	domainReadyTimeout  = 2 * time.Minute
)

var (
	sim      *simcluster.Cluster
	crClient client.Client
	applier  *simcluster.Applier
	repoRoot string
)

func TestNoWorkloadAPI(t *testing.T) {
	ctrllog.SetLogger(klog.Background())
	RegisterFailHandler(Fail)
	RunSpecs(t, "computedomain-operator e2e without the Workload API")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	if os.Getenv("E2E_KUBECONFIG") != "" {
		Skip("this suite starts its own simulated cluster without the Workload API; it does not run against E2E_KUBECONFIG")
	}
	var err error
	repoRoot, err = simcluster.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	By("starting a simulated cluster of one GB200 rack of 4 trays with ComputeDomains and the Workload API off")
	startCtx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
	defer cancel()
	sim, err = simcluster.Start(startCtx, simcluster.Config{
		Topology:           topology.Topology{Profile: "gb200-nvl72", Racks: 1, NodesPerRack: 4},
		RunDuration:        2 * time.Second,
		ComputeDomains:     true,
		DisableWorkloadAPI: true,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(sim.Stop)
	scheme, err := kubescheme.New()
	Expect(err).NotTo(HaveOccurred())
	crConfig := rest.CopyConfig(sim.RESTConfig())
	crConfig.ContentType = runtime.ContentTypeJSON
	crClient, err = client.New(crConfig, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	applier, err = simcluster.NewApplier(sim.RESTConfig())
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(clusterStartTimeout+30*time.Second))

var _ = Describe("A ComputeDomain job on a cluster without the Workload API", func() {
	It("forms its domain from the pods' own clique affinity, and the domain says its placement is not guaranteed and why", func(ctx SpecContext) {
		_, err := sim.Client().Discovery().ServerResourcesForGroupVersion("scheduling.k8s.io/v1beta1")
		Expect(err).To(HaveOccurred(), "the cluster does not serve the Workload API")

		ns, err := sim.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "no-wl-"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		// NVIDIA's manifest: the pods' required pod affinity on the clique label is what keeps them together.
		_, err = applier.CreateFromFile(ctx, ns.Name, repoRoot+"/demo/computedomain-job.yaml")
		Expect(err).NotTo(HaveOccurred())
		Eventually(ctx, func(g Gomega) {
			var cd cdv1beta1.ComputeDomain
			g.Expect(crClient.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "imex-domain"}, &cd)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(cd.Status.Conditions, cdv1beta1.ComputeDomainConditionReady)).To(BeTrue(), "Ready: %+v", cd.Status.Conditions)
			g.Expect(cd.Status.Cliques).To(HaveLen(1))
			c := meta.FindStatusCondition(cd.Status.Conditions, cdv1beta1.ComputeDomainConditionPlacementGuaranteed)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(cdv1beta1.ComputeDomainReasonWorkloadAPIUnavailable))
			g.Expect(c.Message).To(ContainSubstring("scheduling.k8s.io/v1beta1"))
		}).WithTimeout(domainReadyTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	})
})
