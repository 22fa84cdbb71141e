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

package tenants

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/computedomain-operator/computedomain-operator/metering"
)

// Measured is the sum of the measured intervals of a team (job "" for all its jobs) in seconds: device-seconds,
// one GPU per claim.
func (r *Result) Measured(team, job string) float64 {
	sum, _, _ := r.measured(team, job)
	return sum
}

// measured is the device-seconds of the team's (job's) intervals, with the least and the most they can have
// been (Interval.MinSeconds, MaxSeconds).
func (r *Result) measured(team, job string) (sum, least, most float64) {
	for _, iv := range r.Intervals {
		if iv.Team == team && (job == "" || iv.Job == job) {
			sum += iv.Seconds()
			least += iv.MinSeconds()
			most += iv.MaxSeconds()
		}
	}
	return sum, least, most
}

// within says whether billed is within tolerance of the measured bounds [least, most], and says so otherwise.
func within(what string, billed, sum, least, most float64, tolerance time.Duration) error {
	if billed > least-tolerance.Seconds() && billed < most+tolerance.Seconds() {
		return nil
	}
	return fmt.Errorf("%s: billed %.3f device-seconds, measured %.3f (between %.3f and %.3f): more than %s apart", what, billed, sum, least, most, tolerance)
}

// BilledJob is what the report bills for the claims the story measured for a job: how many report intervals
// they have (one each, or the job is billed twice or not at all) and their device-seconds.
func (r *Result) BilledJob(job string) (intervals int, seconds float64) {
	claims := map[string]bool{}
	for _, iv := range r.Intervals {
		if iv.Job == job {
			claims[iv.ClaimUID] = true
		}
	}
	for _, iv := range r.Report.Intervals {
		if claims[iv.ClaimUID] {
			intervals++
			seconds += iv.Seconds
		}
	}
	return intervals, seconds
}

// Check compares the bill with the measured intervals: every measured claim is billed once, to the team of the
// job that held it, in gpu.nvidia.com device-seconds, each job's and each team's device-seconds within tolerance
// (one pull interval) of what was measured: of the least and the most the measured intervals can have been, so
// that a slow look at a node on a loaded machine widens what is accepted by exactly its own uncertainty.
func (r *Result) Check(tolerance time.Duration) error {
	var errs []error
	team := map[string]string{}
	for _, iv := range r.Intervals {
		team[iv.ClaimUID] = iv.Team
	}
	for _, iv := range r.Report.Intervals {
		if t, ok := team[iv.ClaimUID]; !ok || t != iv.Team || iv.DeviceClass != GPUClass {
			errs = append(errs, fmt.Errorf("report interval of claim %s/%s billed to team %q, class %s: the story measured it for team %q (class %s)", iv.Namespace, iv.Claim, iv.Team, iv.DeviceClass, t, GPUClass))
		}
	}
	jobs := map[string]string{}
	for _, iv := range r.Intervals {
		jobs[iv.Job] = iv.Team
	}
	for job, t := range jobs {
		claims := 0
		for _, iv := range r.Intervals {
			if iv.Job == job {
				claims++
			}
		}
		n, billed := r.BilledJob(job)
		if n != claims {
			errs = append(errs, fmt.Errorf("job %s: %d report intervals for its %d claims, want one each", job, n, claims))
		}
		sum, least, most := r.measured(t, job)
		if err := within("job "+job, billed, sum, least, most, tolerance); err != nil {
			errs = append(errs, err)
		}
	}
	for _, t := range []string{TeamA, TeamB} {
		sum, least, most := r.measured(t, "")
		if err := within("team "+t, Billed(r.Report, t, metering.DeviceSeconds), sum, least, most, tolerance); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// WriteBill prints the bill next to the measured intervals: a line per job, then per team the report's total.
func (r *Result) WriteBill(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "TEAM\tNAMESPACE\tJOB\tCLAIMS BILLED\tMEASURED DEVICE-SECONDS\tBILLED DEVICE-SECONDS\tNOTE")
	jobs := map[string]Interval{}
	for _, iv := range r.Intervals {
		jobs[iv.Job] = iv
	}
	names := make([]string, 0, len(jobs))
	for j := range jobs {
		names = append(names, j)
	}
	sort.Slice(names, func(i, k int) bool {
		a, b := jobs[names[i]], jobs[names[k]]
		return a.Team < b.Team || a.Team == b.Team && a.Job < b.Job
	})
	notes := map[string]string{JobWithinQuota: "within quota", JobBorrowing: fmt.Sprintf("borrowed %d from team-b, then preempted", r.Borrowed), JobReclaim: "reclaimed its quota"}
	for _, j := range names {
		n, billed := r.BilledJob(j)
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.3f\t%.3f\t%s\n", jobs[j].Team, jobs[j].Namespace, j, n, r.Measured(jobs[j].Team, j), billed, notes[j])
	}
	for _, team := range []string{TeamA, TeamB} {
		_, _ = fmt.Fprintf(tw, "%s\t%s\ttotal\t\t%.3f\t%.3f\treport, %s\n", team, Namespace(team), r.Measured(team, ""), Billed(r.Report, team, metering.DeviceSeconds), GPUClass)
	}
	return tw.Flush()
}
