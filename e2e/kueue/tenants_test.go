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
	"bytes"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/computedomain-operator/computedomain-operator/e2e/tenants"
	"github.com/computedomain-operator/computedomain-operator/metering"
)

// tenantsStory is issue 15's story, the one `simcluster demo-tenants` runs (e2e/tenants): team-a runs a job
// within its quota and one on team-b's idle quota; a time-slicing claim is refused outside a team and admitted
// inside one; the metering pod is restarted while team-b takes its quota back by preempting the borrower; the
// report bills each team the device-seconds of the allocations the story measured, the borrowed job's to team-a.
func tenantsStory() {
	// pullInterval is the metering component's pull interval: the bill's tolerance.
	const pullInterval = time.Second
	var story *tenants.Story
	BeforeAll(func() {
		story = &tenants.Story{
			Cluster: kc.sim, Client: kc.client, Dynamic: kc.dynamic, Applier: kc.applier, RepoRoot: kc.repoRoot,
			PullInterval: pullInterval, Hold: 2 * time.Second, Timeout: meteringTimeout,
			Step: func(msg string) { By(msg) },
		}
	})

	It("bills team-a its own and its borrowed GPUs and team-b its reclaimed ones, as measured within one pull interval, across a metering restart; refuses cross-team time-slicing", func(ctx SpecContext) {
		res, err := story.Run(ctx)
		Expect(err).NotTo(HaveOccurred())

		var bill bytes.Buffer
		Expect(res.WriteBill(&bill)).To(Succeed())
		GinkgoWriter.Printf("bill of [%s, %s):\n%s", res.From.Format(time.RFC3339Nano), res.To.Format(time.RFC3339Nano), bill.String())
		AddReportEntry("tenants bill", bill.String())

		By("the cross-team time-slicing claim was refused by the sharing policy, naming the rule and the missing label")
		Expect(res.Refusal).To(And(ContainSubstring(tenants.SharingRule), ContainSubstring("has no label team")))

		By("the first metering pod billed the open intervals of team-a's two jobs before its restart")
		Expect(tenants.OpenIntervals(res.BeforeRestart)).To(Equal(8))
		Expect(tenants.Billed(res.BeforeRestart, tenants.TeamA, metering.DeviceSeconds)).To(BeNumerically(">", 0))

		By("team-a borrowed team-b's 4 GPUs, and team-b took them back by preemption")
		Expect(res.Borrowed).To(BeEquivalentTo(4))
		Expect(res.Preemption).To(Equal("InCohortReclamation"))

		By("every measured allocation is billed once, in device-seconds of gpu.nvidia.com, to its team; each job's and each team's bill equals its measured intervals within one pull interval")
		Expect(res.Check(pullInterval)).To(Succeed())
		Expect(res.Report.Intervals).To(HaveLen(len(res.Intervals)), "one report interval per measured claim, nothing else in team-a's and team-b's period")
		for _, team := range []string{tenants.TeamA, tenants.TeamB} {
			AddReportEntry("team "+team, fmt.Sprintf("billed %.3f device-seconds, measured %.3f", tenants.Billed(res.Report, team, metering.DeviceSeconds), res.Measured(team, "")))
		}
		Expect(res.Intervals).To(HaveLen(12), "4 claims each of a-train, a-borrow and b-train")
		// Without the borrowed job team-a's bill would be short by its ~4 × (hold + restart) device-seconds,
		// far over one pull interval; billed twice, over by as much.
		Expect(res.Measured(tenants.TeamA, tenants.JobBorrowing)).To(BeNumerically(">", 4*pullInterval.Seconds()))
	})

	AfterAll(func(ctx SpecContext) {
		Expect(story.Cleanup(ctx)).To(Succeed())
		jobsGone(ctx, "team-a", tenants.JobWithinQuota, tenants.JobBorrowing)
		jobsGone(ctx, "team-b", tenants.JobReclaim)
	})
}
