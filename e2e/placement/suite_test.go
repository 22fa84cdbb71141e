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

package placement

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
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
	// clusterStartTimeout covers starting 72 simulated GB200 trays with the operator.
	clusterStartTimeout = 3 * time.Minute
	podStartTimeout     = time.Minute
	jobTimeout          = 2 * time.Minute
	// gangBindTimeout covers the scheduler placing a whole gang and binding it.
	gangBindTimeout = time.Minute
	// gangHeldTime is how long a gang that cannot be placed is watched staying unbound.
	gangHeldTime = 3 * time.Second
)

// racks and traysPerRack are the acceptance topology of issue 14: 4 NVL72 racks of 18 trays.
const (
	racks        = 4
	traysPerRack = 18
)

// cluster is the suite's simulated cluster and its clients.
type cluster struct {
	sim      *simcluster.Cluster
	client   kubernetes.Interface
	crClient client.Client
	applier  *simcluster.Applier
	repoRoot string
}

var pc cluster

func TestPlacement(t *testing.T) {
	ctrllog.SetLogger(klog.Background())
	RegisterFailHandler(Fail)
	RunSpecs(t, "computedomain-operator gang placement e2e")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	if os.Getenv("E2E_KUBECONFIG") != "" {
		Skip("the placement suite starts its own simulated cluster of 4 racks × 18 trays; it does not run against E2E_KUBECONFIG")
	}
	var err error
	pc.repoRoot, err = simcluster.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	By("starting a simulated cluster of 4 GB200 NVL72 racks × 18 trays with ComputeDomains and the Workload API")
	startCtx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
	defer cancel()
	pc.sim, err = simcluster.Start(startCtx, simcluster.Config{
		Topology:       topology.Topology{Profile: "gb200-nvl72", Racks: racks, NodesPerRack: traysPerRack},
		RunDuration:    2 * time.Second,
		ComputeDomains: true,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(pc.sim.Stop)
	pc.client = pc.sim.Client()
	scheme, err := kubescheme.New()
	Expect(err).NotTo(HaveOccurred())
	// Our kinds have no protobuf encoding (the simulated cluster's admin configuration asks for protobuf).
	crConfig := rest.CopyConfig(pc.sim.RESTConfig())
	crConfig.ContentType = runtime.ContentTypeJSON
	pc.crClient, err = client.New(crConfig, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	pc.applier, err = simcluster.NewApplier(pc.sim.RESTConfig())
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(clusterStartTimeout+30*time.Second))
