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
	"testing"

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

var _ = stories.StartInBeforeSuite(&pc, "the Workload API on", simcluster.Config{})

// The acceptance stories with an unmodified NVIDIA-style manifest, whose pods the webhook makes join their
// domain's PodGroup; the first also with a manifest that names the PodGroup itself.
var _ = stories.PlacementStories(&pc, stories.WorkloadAPI, stories.UnmodifiedJob, stories.GangJob)

// Jobs larger than one rack: each pod joins its slice's PodGroup under the domain's CompositePodGroup.
var _ = stories.MultiRackStories(&pc, stories.WorkloadAPI)
