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
	. "github.com/onsi/ginkgo/v2"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
)

// The stories share one cluster and one Kueue, in this order: quota on our DeviceClasses with borrowing, MIG per
// profile and by memory slices, the two teams' bill from the metering component (Kueue's DRA quota on), then
// topology-aware scheduling of a ComputeDomain job
// (after Kueue's restart with DRA quota off, which a ComputeDomain job needs).
var _ = Describe("Kueue "+simcluster.KueueVersion+" on our DeviceClasses (2 GB200 NVL72 racks × 18 trays, one A100-40GB MIG node)", Ordered, func() {
	Describe("Quota on our DeviceClasses: two teams in one cohort", Ordered, quotaStory)
	Describe("MIG quota: per profile class, and by memory slices", Ordered, migStory)
	Describe("Two teams, a borrowing job, a refused cross-team time-slicing claim and the bill", Ordered, tenantsStory)
	Describe("Topology-aware scheduling of a ComputeDomain job on the NVLink clique", Ordered, topologyStory)
	Describe("Kueue's slices of a ComputeDomain job larger than one NVLink clique", Ordered, multiRackStory)
})
