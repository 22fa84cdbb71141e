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
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/metering"
)

// The teams of demo/kueue/teams.yaml: namespace team-<t> labeled team=<t>, ClusterQueue team-<t> in the cohort
// gpu-platform with 4 nvidia.com/gpu each; team-a may borrow 4.
const (
	TeamA = "a"
	TeamB = "b"
	// GPUResource is the logical resource demo/kueue/controller-config.yaml maps gpu.nvidia.com to.
	GPUResource = "nvidia.com/gpu"
	// GPUClass is the DeviceClass the story's jobs use (demo/kueue/gpu-job.yaml), billed in device-seconds.
	GPUClass = "gpu.nvidia.com"
	gpuJob   = "demo/kueue/gpu-job.yaml"
	// jobPods is the pod count of demo/kueue/gpu-job.yaml, one GPU each.
	jobPods = 4
)

// The story's jobs.
const (
	JobWithinQuota = "a-train"  // team-a, within its quota
	JobBorrowing   = "a-borrow" // team-a, on team-b's idle quota
	JobReclaim     = "b-train"  // team-b, taking its quota back
)

// Namespace is a team's namespace in demo/kueue/teams.yaml.
func Namespace(team string) string { return "team-" + team }

// Story runs the multi-tenant story on a simulated cluster where Kueue runs with
// demo/kueue/controller-config.yaml and demo/kueue/teams.yaml is applied, with no job of either team running.
type Story struct {
	Cluster  *simcluster.Cluster
	Client   kubernetes.Interface
	Dynamic  dynamic.Interface
	Applier  *simcluster.Applier
	RepoRoot string
	// PullInterval is the metering component's pull interval: the bill must match the measured intervals
	// within it.
	PullInterval time.Duration
	// Hold is how long the jobs hold their GPUs between steps.
	Hold time.Duration
	// Timeout bounds each wait.
	Timeout time.Duration
	// Step reports each step as it starts, and what it found.
	Step func(msg string)

	// sharedNamespace is the namespace of no team the story made.
	sharedNamespace string
}

// Result is what the story did and what the bill says.
type Result struct {
	From, To time.Time
	// Refusal is the API server's refusal of the time-slicing claim in a namespace of no team.
	Refusal string
	// Borrowed is team-a's borrowed nvidia.com/gpu, as its ClusterQueue said while a-borrow ran.
	Borrowed int64
	// Preemption is the reason of a-borrow's Preempted condition.
	Preemption string
	// Intervals are the allocations the story measured.
	Intervals []Interval
	// BeforeRestart is the first metering pod's report, while team-a's two jobs ran.
	BeforeRestart metering.Report
	// Report is the metering component's report of [From, To), asked after its restart.
	Report metering.Report
}

func (s *Story) step(format string, args ...any) {
	if s.Step != nil {
		s.Step(fmt.Sprintf(format, args...))
	}
}

// Run runs the story. The metering component and the sharing policy are turned on first (helm upgrade); Cleanup
// turns them off again.
func (s *Story) Run(ctx context.Context) (*Result, error) {
	res := &Result{}
	s.step("helm upgrade --reuse-values: metering on (pull every %s) and the sharing policy on", s.PullInterval)
	if err := s.Cluster.UpgradeOperator(ctx, ChartValues(s.PullInterval, nil)); err != nil {
		return nil, err
	}
	server, err := s.meteringURL(ctx, "")
	if err != nil {
		return nil, err
	}
	res.From = time.Now()

	if err := s.sharing(ctx, res); err != nil {
		return nil, err
	}

	trackCtx, stop := context.WithCancel(ctx)
	defer stop()
	tr := newTracker(s.Client, s.Cluster)
	go tr.run(trackCtx)

	s.step("team-a submits %s (%d GPUs, its nominal quota)", JobWithinQuota, jobPods)
	if err := s.submit(ctx, tr, TeamA, JobWithinQuota); err != nil {
		return nil, err
	}
	if err := s.expectUsage(ctx, TeamA, jobPods, 0); err != nil {
		return nil, err
	}
	s.step("team-a submits %s (%d GPUs more): admitted on team-b's idle quota", JobBorrowing, jobPods)
	if err := s.submit(ctx, tr, TeamA, JobBorrowing); err != nil {
		return nil, err
	}
	if err := s.expectUsage(ctx, TeamA, 2*jobPods, jobPods); err != nil {
		return nil, err
	}
	res.Borrowed = jobPods
	time.Sleep(s.Hold)
	if res.BeforeRestart, err = s.openBill(ctx, server, res.From, 2*jobPods); err != nil {
		return nil, err
	}
	s.step("the metering pod bills team-a %.3f device-seconds so far, %d intervals open", Billed(res.BeforeRestart, TeamA, metering.DeviceSeconds), 2*jobPods)

	old, err := s.scaleMetering(ctx, 0)
	if err != nil {
		return nil, err
	}
	s.step("while it is down, team-b submits %s and takes its quota back", JobReclaim)
	if err := s.submit(ctx, tr, TeamB, JobReclaim); err != nil {
		return nil, err
	}
	if res.Preemption, err = s.preempted(ctx, TeamA, JobBorrowing); err != nil {
		return nil, err
	}
	if err := s.ended(ctx, tr, TeamA, JobBorrowing); err != nil {
		return nil, err
	}
	s.step("%s preempted (%s), its GPUs unprepared; team-a keeps %s", JobBorrowing, res.Preemption, JobWithinQuota)
	if _, err := s.scaleMetering(ctx, 1); err != nil {
		return nil, err
	}
	if server, err = s.meteringURL(ctx, old); err != nil {
		return nil, err
	}
	s.step("a new metering pod serves at %s", server)
	time.Sleep(s.Hold)

	s.step("both teams delete their jobs")
	for _, j := range [][2]string{{TeamA, JobWithinQuota}, {TeamA, JobBorrowing}, {TeamB, JobReclaim}} {
		if err := s.Client.BatchV1().Jobs(Namespace(j[0])).Delete(ctx, j[1], metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
			return nil, fmt.Errorf("delete job %s/%s: %w", Namespace(j[0]), j[1], err)
		}
	}
	for _, j := range [][2]string{{TeamA, JobWithinQuota}, {TeamB, JobReclaim}} {
		if err := s.ended(ctx, tr, j[0], j[1]); err != nil {
			return nil, err
		}
	}
	res.To = time.Now()
	stop()
	res.Intervals = tr.all()

	s.step("compute-domain-metering report --from %s --to %s", res.From.UTC().Format(time.RFC3339Nano), res.To.UTC().Format(time.RFC3339Nano))
	res.Report, err = s.finalReport(ctx, server, res)
	return res, err
}

// sharing: a time-slicing claim in a namespace of no team (one both teams could work in) is refused; the same
// claim in team-a's namespace is admitted.
func (s *Story) sharing(ctx context.Context, res *Result) error {
	ns, err := s.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "shared-"}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create a namespace of no team: %w", err)
	}
	shared := ns.Name
	s.sharedNamespace = shared
	err = s.poll(ctx, "the sharing policy refuses a time-slicing claim in "+shared, func(ctx context.Context) (bool, error) {
		_, err := s.Client.ResourceV1().ResourceClaims(shared).Create(ctx, TimeSlicedClaim("shared-gpu"), metav1.CreateOptions{})
		if err == nil {
			// The policy is not in force yet.
			return false, s.Client.ResourceV1().ResourceClaims(shared).Delete(ctx, "shared-gpu", metav1.DeleteOptions{})
		}
		if !strings.Contains(err.Error(), SharingRule) {
			return false, fmt.Errorf("refused, but not by %s: %w", SharingRule, err)
		}
		res.Refusal = err.Error()
		return true, nil
	})
	if err != nil {
		return err
	}
	s.step("a time-slicing claim in %s (no team label) is refused: %s", shared, res.Refusal)
	if _, err := s.Client.ResourceV1().ResourceClaims(Namespace(TeamA)).Create(ctx, TimeSlicedClaim("shared-gpu"), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("the same time-slicing claim inside team a: %w", err)
	}
	s.step("the same claim in %s (team=%s) is admitted", Namespace(TeamA), TeamA)
	return nil
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Cleanup deletes what the story made (whatever step it got to) and turns metering and the sharing policy off.
func (s *Story) Cleanup(ctx context.Context) error {
	var errs []error
	for _, j := range [][2]string{{TeamA, JobWithinQuota}, {TeamA, JobBorrowing}, {TeamB, JobReclaim}} {
		errs = append(errs, ignoreNotFound(s.Client.BatchV1().Jobs(Namespace(j[0])).Delete(ctx, j[1], metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})))
	}
	errs = append(errs, ignoreNotFound(s.Client.ResourceV1().ResourceClaims(Namespace(TeamA)).Delete(ctx, "shared-gpu", metav1.DeleteOptions{})))
	if s.sharedNamespace != "" {
		errs = append(errs, ignoreNotFound(s.Client.CoreV1().Namespaces().Delete(ctx, s.sharedNamespace, metav1.DeleteOptions{})))
	}
	errs = append(errs, s.Cluster.UpgradeOperator(ctx, OffValues()))
	return errors.Join(errs...)
}

// submit creates a team's job from demo/kueue/gpu-job.yaml and waits until Kueue admitted it and its pods run.
func (s *Story) submit(ctx context.Context, tr *tracker, team, name string) error {
	objs, err := DecodeFixture(s.RepoRoot, gpuJob)
	if err != nil {
		return err
	}
	if err := Rename(objs, name, nil); err != nil {
		return err
	}
	ns := Namespace(team)
	tr.watch(ns, name, team)
	if _, err := s.Applier.Create(ctx, ns, objs); err != nil {
		return fmt.Errorf("create job %s/%s: %w", ns, name, err)
	}
	err = s.poll(ctx, "Kueue admits "+ns+"/"+name, func(ctx context.Context) (bool, error) {
		wl, j, err := JobWorkload(ctx, s.Client, s.Dynamic, ns, name)
		if err != nil {
			return false, nil //nolint:nilerr // the Workload comes after the Job: retried
		}
		return IsTrue(Condition(wl, "Admitted")) && !ptr.Deref(j.Spec.Suspend, false), nil
	})
	if err != nil {
		return err
	}
	return s.poll(ctx, fmt.Sprintf("the %d claims of %s/%s prepared and their pods Running", jobPods, ns, name), func(context.Context) (bool, error) {
		prepared, _, running, err := tr.job(ns, name)
		return prepared == jobPods && running == jobPods, err
	})
}

// ended waits until every measured claim of a job is unprepared.
func (s *Story) ended(ctx context.Context, tr *tracker, team, name string) error {
	ns := Namespace(team)
	return s.poll(ctx, "the claims of "+ns+"/"+name+" unprepared", func(context.Context) (bool, error) {
		prepared, open, _, err := tr.job(ns, name)
		return prepared > 0 && open == 0, err
	})
}

// expectUsage waits until a team's ClusterQueue uses total GPUs, borrowed of them.
func (s *Story) expectUsage(ctx context.Context, team string, total, borrowed int64) error {
	var t, b int64
	err := s.poll(ctx, fmt.Sprintf("ClusterQueue %s uses %d %s, %d borrowed", Namespace(team), total, GPUResource, borrowed), func(ctx context.Context) (bool, error) {
		var err error
		t, b, err = QueueUsage(ctx, s.Dynamic, Namespace(team), GPUResource)
		return t == total && b == borrowed, err
	})
	if err != nil {
		return fmt.Errorf("%w (last: %d, %d borrowed)", err, t, b)
	}
	s.step("ClusterQueue %s: %d %s in use, %d of them borrowed", Namespace(team), t, GPUResource, b)
	return nil
}

// preempted waits for a job's Workload to be preempted and returns the reason.
func (s *Story) preempted(ctx context.Context, team, name string) (string, error) {
	var reason string
	err := s.poll(ctx, "Kueue preempts "+Namespace(team)+"/"+name, func(ctx context.Context) (bool, error) {
		wl, _, err := JobWorkload(ctx, s.Client, s.Dynamic, Namespace(team), name)
		if err != nil {
			return false, err
		}
		c := Condition(wl, "Preempted")
		if IsTrue(c) {
			reason = c.Reason
		}
		return IsTrue(c), nil
	})
	return reason, err
}

// scaleMetering scales the metering Deployment to replicas and waits until that many of its pods run (and none
// is left terminating): a stop (0) and a restart (1) of the component. It returns the name of the pod that ran
// before.
func (s *Story) scaleMetering(ctx context.Context, replicas int32) (string, error) {
	deployments := s.Client.AppsV1().Deployments(simcluster.OperatorNamespace)
	var before string
	if pods, err := s.Client.CoreV1().Pods(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{LabelSelector: MeteringPodSelector}); err == nil && len(pods.Items) == 1 {
		before = pods.Items[0].Name
	}
	scale, err := deployments.GetScale(ctx, MeteringDeployment, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("scale of deployment %s: %w", MeteringDeployment, err)
	}
	scale.Spec.Replicas = replicas
	if _, err := deployments.UpdateScale(ctx, MeteringDeployment, scale, metav1.UpdateOptions{}); err != nil {
		return "", fmt.Errorf("scale deployment %s to %d: %w", MeteringDeployment, replicas, err)
	}
	err = s.poll(ctx, fmt.Sprintf("%d metering pods", replicas), func(ctx context.Context) (bool, error) {
		pods, err := s.Client.CoreV1().Pods(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{LabelSelector: MeteringPodSelector})
		if err != nil {
			return false, err
		}
		running := int32(0)
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		return int32(len(pods.Items)) == replicas && running == replicas, nil
	})
	if err != nil {
		return "", err
	}
	if replicas == 0 {
		s.step("the metering component is down: Deployment %s scaled to 0, its pod %s gone", MeteringDeployment, before)
	} else {
		s.step("the metering component is back: Deployment %s scaled to %d", MeteringDeployment, replicas)
	}
	return before, nil
}

// meteringURL waits for a Running metering pod other than except.
func (s *Story) meteringURL(ctx context.Context, except string) (string, error) {
	var url string
	err := s.poll(ctx, "a Running metering pod", func(ctx context.Context) (bool, error) {
		var err error
		url, err = MeteringURL(ctx, s.Client, except)
		return url != "", err
	})
	return url, err
}

// openBill asks for the report from from on until it has open intervals (devices held now).
func (s *Story) openBill(ctx context.Context, server string, from time.Time, open int) (metering.Report, error) {
	var r metering.Report
	err := s.poll(ctx, fmt.Sprintf("a report with %d open intervals", open), func(ctx context.Context) (bool, error) {
		var err error
		r, err = Report(ctx, server, from, time.Now().Add(time.Hour))
		return err == nil && OpenIntervals(r) == open, err
	})
	return r, err
}

// finalReport asks for the report of [From, To) until every interval in it is closed and every claim the story
// measured is in it (what the nodes recorded reached the new metering pod).
func (s *Story) finalReport(ctx context.Context, server string, res *Result) (metering.Report, error) {
	var r metering.Report
	var missing []string
	err := s.poll(ctx, "a report with every measured claim, all closed", func(ctx context.Context) (bool, error) {
		var err error
		if r, err = Report(ctx, server, res.From, res.To); err != nil {
			return false, nil //nolint:nilerr // the new pod may not serve yet: retried
		}
		in := map[string]bool{}
		for _, iv := range r.Intervals {
			in[iv.ClaimUID] = true
		}
		missing = missing[:0]
		for _, iv := range res.Intervals {
			if !in[iv.ClaimUID] {
				missing = append(missing, iv.Namespace+"/"+iv.Claim)
			}
		}
		return OpenIntervals(r) == 0 && len(missing) == 0, nil
	})
	if err != nil {
		return r, fmt.Errorf("%w: claims not in the report: %v, open intervals: %d", err, missing, OpenIntervals(r))
	}
	return r, nil
}

func (s *Story) poll(ctx context.Context, what string, cond wait.ConditionWithContextFunc) error {
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, s.Timeout, true, cond); err != nil {
		return fmt.Errorf("%s (within %s): %w", what, s.Timeout, err)
	}
	return nil
}
