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

package kueue

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"
	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
)

// Named timeouts of the suite.
const (
	// clusterStartTimeout covers starting 37 simulated nodes with the operator, and Kueue.
	clusterStartTimeout = 3 * time.Minute
	// admitTimeout covers Kueue admitting (or evicting) a workload and the Job controller acting on it.
	admitTimeout    = 30 * time.Second
	podStartTimeout = time.Minute
	// meteringTimeout covers a helm upgrade that starts the metering pod, and its restart.
	meteringTimeout = 2 * time.Minute
	// heldTime is how long a workload Kueue should not admit is watched staying held.
	heldTime = 3 * time.Second
	// jobRunTime keeps Job pods running for the whole suite: quota is given back by deleting Jobs, never by
	// a Job ending on its own in the middle of a story.
	jobRunTime = 10 * time.Minute
)

// racks and traysPerRack: two NVL72 racks, each one NVLink clique of 18 trays.
const (
	racks        = 2
	traysPerRack = 18
)

// migProfiles are the chart's per-profile MIG classes the suite installs (the profiles of the A100-40GB).
var migProfiles = []any{"1g.5gb", "2g.10gb", "3g.20gb"}

// cluster is the suite's simulated cluster, its Kueue and clients.
type cluster struct {
	sim      *simcluster.Cluster
	kueue    *simcluster.Kueue
	client   kubernetes.Interface
	dynamic  dynamic.Interface
	crClient client.Client
	applier  *simcluster.Applier
	repoRoot string
}

var kc cluster

func TestKueue(t *testing.T) {
	ctrllog.SetLogger(klog.Background())
	RegisterFailHandler(Fail)
	RunSpecs(t, "computedomain-operator with Kueue "+simcluster.KueueVersion+" e2e")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	if os.Getenv("E2E_KUBECONFIG") != "" {
		Skip("the Kueue suite starts its own simulated cluster and Kueue; it does not run against E2E_KUBECONFIG")
	}
	var err error
	kc.repoRoot, err = simcluster.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	By("starting a simulated cluster of 2 GB200 NVL72 racks × 18 trays and one A100-40GB node with partitionable MIG")
	startCtx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
	defer cancel()
	kc.sim, err = simcluster.Start(startCtx, simcluster.Config{
		Topology: topology.Topology{
			Profile: "gb200-nvl72", Racks: racks, NodesPerRack: traysPerRack,
			Extra: []topology.NodePool{{Profile: "a100-40gb-mig", Count: 1}},
		},
		RunDuration:    jobRunTime,
		ComputeDomains: true,
		ChartValues: map[string]any{
			"featureGates":  map[string]any{"DynamicMIG": true},
			"deviceClasses": map[string]any{"migProfiles": migProfiles},
		},
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(kc.sim.Stop)
	kc.client = kc.sim.Client()
	kc.dynamic, err = dynamic.NewForConfig(kc.sim.RESTConfig())
	Expect(err).NotTo(HaveOccurred())
	scheme, err := kubescheme.New()
	Expect(err).NotTo(HaveOccurred())
	// Our kinds have no protobuf encoding (the simulated cluster's admin configuration asks for protobuf).
	crConfig := rest.CopyConfig(kc.sim.RESTConfig())
	crConfig.ContentType = runtime.ContentTypeJSON
	kc.crClient, err = client.New(crConfig, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	kc.applier, err = simcluster.NewApplier(kc.sim.RESTConfig())
	Expect(err).NotTo(HaveOccurred())

	By("starting Kueue " + simcluster.KueueVersion + " (bin/kueue) with demo/kueue/controller-config.yaml: DRA quota on")
	startKueue(ctx, nil)
	// Before the cluster stops (cleanups run last-in first-out): whichever Kueue runs then.
	DeferCleanup(func() { kc.kueue.Stop() })
	By("creating the two teams' namespaces, ClusterQueues in one cohort and LocalQueues (demo/kueue/teams.yaml)")
	apply(ctx, "", "demo/kueue/teams.yaml")
}, NodeTimeout(clusterStartTimeout+30*time.Second))

// startKueue (re)starts Kueue with demo/kueue/controller-config.yaml and gates over it.
func startKueue(ctx context.Context, gates map[string]bool) {
	GinkgoHelper()
	if kc.kueue != nil {
		kc.kueue.Stop()
	}
	var err error
	kc.kueue, err = simcluster.StartKueue(ctx, kc.sim, simcluster.KueueConfig{
		ConfigFile:   filepath.Join(kc.repoRoot, "demo/kueue/controller-config.yaml"),
		FeatureGates: gates,
	})
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("Kueue log: %s\n", kc.kueue.LogPath())
}

var _ = AfterEach(func() {
	if CurrentSpecReport().Failed() && kc.kueue != nil {
		GinkgoWriter.Printf("Kueue log (%s), last lines:\n%s\n", kc.kueue.LogPath(), kc.kueue.LogTail(6000))
	}
})
