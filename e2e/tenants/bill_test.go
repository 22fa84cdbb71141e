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
	"strings"
	"testing"
	"time"

	"github.com/computedomain-operator/computedomain-operator/metering"
)

// storyJobs are the story's jobs in a fixed order: report intervals 0, 1 and 2 of storyResult.
var storyJobs = []struct{ job, team string }{{JobWithinQuota, TeamA}, {JobBorrowing, TeamA}, {JobReclaim, TeamB}}

// storyResult is a Result as the story makes it: a-train and a-borrow of team a, b-train of team b, one claim
// each of 10, 5 and 3 s, and a report that bills each claim once, as measured.
func storyResult() *Result {
	seconds := map[string]float64{JobWithinQuota: 10, JobBorrowing: 5, JobReclaim: 3}
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	r := &Result{From: t0, To: t0.Add(time.Minute)}
	teams := map[string]float64{}
	for _, j := range storyJobs {
		d := time.Duration(seconds[j.job] * float64(time.Second))
		iv := Interval{Team: j.team, Namespace: Namespace(j.team), Job: j.job, Pod: j.job + "-0", Node: "n0", Claim: j.job + "-claim", ClaimUID: "uid-" + j.job,
			Start: t0, End: t0.Add(d), NotBefore: t0, LastSeen: t0.Add(d)}
		r.Intervals = append(r.Intervals, iv)
		r.Report.Intervals = append(r.Report.Intervals, metering.ReportInterval{Team: j.team, Namespace: iv.Namespace, Claim: iv.Claim, ClaimUID: iv.ClaimUID, DeviceClass: GPUClass, Start: iv.Start, End: iv.End, Seconds: d.Seconds()})
		teams[j.team] += d.Seconds()
	}
	for _, team := range []string{TeamA, TeamB} {
		r.Report.Teams = append(r.Report.Teams, metering.TeamBill{Team: team, Billed: map[metering.Unit]float64{metering.DeviceSeconds: teams[team]}})
	}
	return r
}

// billTeam sets a team's billed device-seconds.
func billTeam(r *Result, team string, s float64) {
	for i := range r.Report.Teams {
		if r.Report.Teams[i].Team == team {
			r.Report.Teams[i].Billed[metering.DeviceSeconds] = s
		}
	}
}

func TestCheck(t *testing.T) {
	const borrowed = 1 // a-borrow's report interval
	cases := map[string]struct {
		edit func(r *Result)
		want []string // substrings of the error; none: no error
	}{
		"a bill as measured passes": {edit: func(*Result) {}},
		"a bill off by less than one pull interval passes": {edit: func(r *Result) {
			r.Report.Intervals[0].Seconds += 0.4
			billTeam(r, TeamA, 15.4)
		}},
		"the borrowed job not billed fails, naming it and team a": {edit: func(r *Result) {
			r.Report.Intervals = append(r.Report.Intervals[:borrowed], r.Report.Intervals[borrowed+1:]...)
			billTeam(r, TeamA, 10)
		}, want: []string{"job a-borrow: 0 report intervals for its 1 claims", "team a: billed 10.000 device-seconds, measured 15.000"}},
		"the borrowed job billed twice fails": {edit: func(r *Result) {
			r.Report.Intervals = append(r.Report.Intervals, r.Report.Intervals[borrowed])
			billTeam(r, TeamA, 20)
		}, want: []string{"job a-borrow: 2 report intervals for its 1 claims", "job a-borrow: billed 10.000 device-seconds, measured 5.000", "team a: billed 20.000"}},
		"the borrowed job billed to the lending team fails": {edit: func(r *Result) {
			r.Report.Intervals[borrowed].Team = TeamB
			billTeam(r, TeamA, 10)
			billTeam(r, TeamB, 8)
		}, want: []string{`a-borrow-claim billed to team "b"`, `measured it for team "a"`, "team a: billed 10.000", "team b: billed 8.000"}},
		"a claim the story did not make fails": {edit: func(r *Result) {
			r.Report.Intervals = append(r.Report.Intervals, metering.ReportInterval{Team: TeamA, Namespace: "team-a", Claim: "other", ClaimUID: "uid-other", DeviceClass: GPUClass, Seconds: 0.1})
		}, want: []string{`claim team-a/other billed to team "a"`}},
		"a job off by one pull interval fails": {edit: func(r *Result) {
			r.Report.Intervals[2].Seconds++
			billTeam(r, TeamB, 4)
		}, want: []string{"job b-train: billed 4.000 device-seconds, measured 3.000 (between 3.000 and 3.000): more than 1s apart", "team b: billed 4.000"}},
		"a look at the node that took 2 s widens what is accepted by those 2 s": {edit: func(r *Result) {
			r.Intervals[2].NotBefore = r.Intervals[2].Start.Add(-2 * time.Second)
			r.Report.Intervals[2].Seconds += 2.5
			billTeam(r, TeamB, 5.5)
		}},
		"a slow look does not hide a bill beyond its own uncertainty": {edit: func(r *Result) {
			r.Intervals[2].NotBefore = r.Intervals[2].Start.Add(-2 * time.Second)
			r.Report.Intervals[2].Seconds += 3.2
			billTeam(r, TeamB, 6.2)
		}, want: []string{"job b-train: billed 6.200 device-seconds, measured 3.000 (between 3.000 and 5.000)", "team b: billed 6.200"}},
		"a bill short of the least the interval can have been fails": {edit: func(r *Result) {
			r.Intervals[0].LastSeen = r.Intervals[0].End.Add(-2 * time.Second)
			r.Report.Intervals[0].Seconds -= 3.1
			billTeam(r, TeamA, 11.9)
		}, want: []string{"job a-train: billed 6.900 device-seconds, measured 10.000 (between 8.000 and 10.000)"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := storyResult()
			tc.edit(r)
			err := r.Check(time.Second)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check passed, want an error with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Check error %q lacks %q", err, w)
				}
			}
		})
	}
}
