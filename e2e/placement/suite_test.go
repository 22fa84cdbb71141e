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
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/computedomain-operator/computedomain-operator/e2e/placement/stories"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
)

// pc is the suite's cluster, started by BeforeSuite.
var pc *stories.Cluster

func TestPlacement(t *testing.T) {
	ctrllog.SetLogger(klog.Background())
	RegisterFailHandler(Fail)
	RunSpecs(t, "computedomain-operator gang placement e2e")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	if os.Getenv("E2E_KUBECONFIG") != "" {
		Skip("the placement suite starts its own simulated cluster of 4 racks × 18 trays; it does not run against E2E_KUBECONFIG")
	}
	By("starting a simulated cluster of 4 GB200 NVL72 racks × 18 trays with ComputeDomains, the Workload API and the pod-group webhook")
	startCtx, cancel := context.WithTimeout(ctx, stories.ClusterStartTimeout)
	defer cancel()
	var err error
	pc, err = stories.Start(startCtx, simcluster.Config{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(pc.Sim.Stop)
}, NodeTimeout(stories.ClusterStartTimeout+30*time.Second))

// The acceptance stories with an unmodified NVIDIA-style manifest, whose pods the webhook makes join their
// domain's PodGroup; the first also with a manifest that names the PodGroup itself.
var _ = stories.PlacementStories(&pc, stories.WorkloadAPI, stories.UnmodifiedJob, stories.GangJob)
