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

package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/pprof/profile"
	dto "github.com/prometheus/client_model/go"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/cmd/internal/clustercli"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/internal/sliceplan"
)

// benchNamespace holds the benchmark's domains and jobs.
const benchNamespace = "bench-formation"

var computeDomains = cdv1beta1.GroupVersion.WithResource("computedomains")

// formationRun is what one formation measured.
type formationRun struct {
	toScheduled time.Duration // Job created → every pod bound to a node
	toReady     time.Duration // Job created → domain Ready
	toRunning   time.Duration // Job created → every pod Running
	// retried are the pods that needed a second NodePrepareResources: those with a Warning event
	// FailedPrepareDynamicResources (on a real kubelet each waits for its pod resync, 60-90 s, before the next).
	retried int
	// failedPrepares are those events, counting repeats.
	failedPrepares int
	counts         writeCounts
	// audited are our components' writes as the API server's audit log shows them, from the domain's
	// creation until formation.
	audited []simcluster.AuditedWrite
	// controllerCPU is the ComputeDomain controller's CPU time from the Job's creation until formation (the
	// samples of a CPU profile on the goroutines labeled with its binary's name).
	controllerCPU time.Duration
	// domainWatchBytes and domainWatchEvents are what the API server sent its ComputeDomain watchers from the
	// domain's creation until formation (apiserver_watch_events_sizes and _total): the cost of every status
	// write times the number of watchers that receive it.
	domainWatchBytes, domainWatchEvents float64
}

// auditedWrites counts the audited writes, and the 409 and 429 answers among them.
func (r formationRun) auditedWrites() (writes, conflicts, throttled int) {
	for _, w := range r.audited {
		writes++
		switch w.Code {
		case 409:
			conflicts++
		case 429:
			throttled++
		}
	}
	return writes, conflicts, throttled
}

// runFormation: a ComputeDomain and a Job of one pod per node (GPU
// claim + channel), spread over the racks; time to Ready and to all pods
// Running, API writes of our components and HTTP 409s; medians over runs.
func runFormation(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench formation", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf clustercli.Flags
	cf.Register(fs, 4, 16, "")
	domainNodes := fs.Int("domain-nodes", 0, "pods (one per node) of the domain's Job (default: every rack node)")
	runs := fs.Int("runs", 3, "formations to measure (the table shows medians)")
	formationTimeout := fs.Duration("formation-timeout", 5*time.Minute, "longest wait for one formation and for its teardown")
	jsonOut := fs.String("json", "", "also write the runs' figures to this file (JSON, for bench plot)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the first run's formation (Job created → domain Ready and all pods Running; not the cluster's start nor the teardown) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !cf.ComputeDomains {
		return errors.New("--compute-domains=false: the formation benchmark needs ComputeDomains")
	}
	if *domainNodes == 0 {
		*domainNodes = cf.Racks * cf.NodesPerRack
	}
	if *domainNodes < 1 || *domainNodes > cf.Racks*cf.NodesPerRack {
		return fmt.Errorf("--domain-nodes %d: allowed values are 1 to %d (--racks × --nodes-per-rack)", *domainNodes, cf.Racks*cf.NodesPerRack)
	}
	if *runs < 1 {
		return fmt.Errorf("--runs %d: must be at least 1", *runs)
	}
	if plan, err := sliceplan.New(*domainNodes, cf.NodesPerRack, 0); err != nil {
		return fmt.Errorf("--domain-nodes %d: %w", *domainNodes, err)
	} else if len(plan.Slices) > cf.Racks {
		return fmt.Errorf("--domain-nodes %d: the domain's %d slices (%s) need a rack each, and there are %d racks", *domainNodes, len(plan.Slices), plan.Summary(), cf.Racks)
	}
	cfg, err := cf.Config()
	if err != nil {
		return err
	}
	// The slice plan's clique size is the chart's, not the cluster's: racks smaller than NVL72's say so.
	cfg.ChartValues = map[string]any{"controller": map[string]any{"maxNodesPerClique": cf.NodesPerRack}}
	counter := newAPIWriteCounter()
	cfg.ComponentConfig = counter.wrap
	cfg.AuditWrites = true
	// Job pods run until the run deletes them.
	cfg.RunDuration = 24 * time.Hour
	ctx = clustercli.WithLogger(ctx, cf.Logger(stderr))
	startedAt := time.Now()
	cluster, err := simcluster.Start(ctx, cfg)
	if err != nil {
		return fmt.Errorf("start cluster: %w", err)
	}
	defer clustercli.StopQuietly(cluster)
	_, _ = fmt.Fprintf(stderr, "cluster of %d nodes (%s) ready in %.1fs, %s\n", len(cluster.Nodes()), clustercli.DescribeNodes(cluster.Nodes()), time.Since(startedAt).Seconds(), clustercli.Footprint(len(cluster.Nodes())))

	b := formationBench{client: cluster.Client(), counter: counter, nodes: *domainNodes, timeout: *formationTimeout, audit: cluster.AuditedWrites}
	if b.dyn, err = dynamic.NewForConfig(cluster.RESTConfig()); err != nil {
		return err
	}
	{
		waited := time.Now()
		if err := waitForCliqueDaemons(ctx, b.dyn, cf.Racks*cf.NodesPerRack, *formationTimeout); err != nil {
			return err
		}
		_, _ = fmt.Fprintf(stderr, "long-lived IMEX daemons ready and listed in their cliques' ensembles on all %d rack nodes after %.1fs more\n", cf.Racks*cf.NodesPerRack, time.Since(waited).Seconds())
	}
	if _, err := b.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := b.client.ResourceV1().ResourceClaimTemplates(benchNamespace).Create(ctx, gpuClaimTemplate(), metav1.CreateOptions{}); err != nil {
		return err
	}
	b.profile = &formationProfile{}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer func() { _ = f.Close() }()
		b.profile.out = f
	}
	var results []formationRun
	for i := range *runs {
		r, err := b.run(ctx, fmt.Sprintf("bench-%d", i))
		if err != nil {
			// Said before the deferred teardown, which silences stderr and may take minutes at this size.
			_, _ = fmt.Fprintf(stderr, "run %d failed: %v; stopping the cluster\n", i+1, err)
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		_, _ = fmt.Fprintf(stderr, "run %d: Ready after %.2fs, all pods Running after %.2fs, %d pods retried a prepare\n", i+1, r.toReady.Seconds(), r.toRunning.Seconds(), r.retried)
		results = append(results, r)
	}
	printFormationTable(stdout, results, *domainNodes, cf.Racks)
	if *jsonOut != "" {
		return writeFormationJSON(*jsonOut, results, *domainNodes, cf)
	}
	return nil
}

// formationProfile profiles each formation of the benchmark, from its Job's creation until the domain is Ready
// and its pods run: the controller's CPU time, and the first formation's profile in out (--cpuprofile).
type formationProfile struct {
	out     *os.File
	buf     bytes.Buffer
	stopped int
}

func (p *formationProfile) start() error {
	p.buf.Reset()
	if err := pprof.StartCPUProfile(&p.buf); err != nil {
		return fmt.Errorf("CPU profile of the formation: %w", err)
	}
	return nil
}

// stop ends the profile and returns the controller's CPU time in it.
func (p *formationProfile) stop() (time.Duration, error) {
	pprof.StopCPUProfile()
	if p.stopped++; p.stopped == 1 && p.out != nil {
		if _, err := p.out.Write(p.buf.Bytes()); err != nil {
			return 0, fmt.Errorf("--cpuprofile: %w", err)
		}
	}
	prof, err := profile.Parse(bytes.NewReader(p.buf.Bytes()))
	if err != nil {
		return 0, fmt.Errorf("read the formation's CPU profile: %w", err)
	}
	return labeledCPU(prof, simcluster.ComponentLabel, simcluster.ControllerComponent)
}

type formationBench struct {
	profile *formationProfile
	client  kubernetes.Interface
	dyn     dynamic.Interface
	counter *apiWriteCounter
	nodes   int
	timeout time.Duration
	audit   func(from, to time.Time) ([]simcluster.AuditedWrite, error)
}

// run forms one domain, measures, then deletes it and waits until its pods and the domain are gone.
func (b formationBench) run(ctx context.Context, name string) (formationRun, error) {
	var r formationRun
	cd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"numNodes": int64(b.nodes),
			"channel":  map[string]any{"resourceClaimTemplate": map[string]any{"name": name + "-channel"}},
		},
	}}
	// Writes count from the domain's creation (the controller's setup
	// writes are part of the formation); the clock starts at the Job, as
	// users run it.
	b.counter.reset()
	watchBefore, err := domainWatchSent(ctx, b.client)
	if err != nil {
		return r, err
	}
	from := time.Now()
	if _, err := b.dyn.Resource(computeDomains).Namespace(benchNamespace).Create(ctx, cd, metav1.CreateOptions{}); err != nil {
		return r, err
	}
	if err := b.profile.start(); err != nil {
		return r, err
	}
	start := time.Now()
	if _, err := b.client.BatchV1().Jobs(benchNamespace).Create(ctx, formationJob(name, b.nodes), metav1.CreateOptions{}); err != nil {
		return r, err
	}
	// Listing every pod costs the API server too: poll less often in large clusters.
	interval := 50 * time.Millisecond * time.Duration(max(1, b.nodes/64))
	err = wait.PollUntilContextTimeout(ctx, interval, b.timeout, true, func(ctx context.Context) (bool, error) {
		if r.toReady == 0 {
			got, err := b.dyn.Resource(computeDomains).Namespace(benchNamespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			if status, _, _ := unstructured.NestedString(got.Object, "status", "status"); status == "Ready" {
				r.toReady = time.Since(start)
			}
		}
		if r.toRunning == 0 {
			pods, err := b.client.CoreV1().Pods(benchNamespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + name})
			if err != nil {
				return false, nil
			}
			running, bound := 0, 0
			for _, p := range pods.Items {
				if p.Spec.NodeName != "" {
					bound++
				}
				if p.Status.Phase == corev1.PodRunning {
					running++
				}
			}
			if r.toScheduled == 0 && bound == b.nodes {
				r.toScheduled = time.Since(start)
			}
			if running == b.nodes {
				r.toRunning = time.Since(start)
			}
		}
		return r.toReady > 0 && r.toRunning > 0, nil
	})
	var profErr error
	r.controllerCPU, profErr = b.profile.stop()
	r.counts = b.counter.snapshot()
	watchAfter, watchErr := domainWatchSent(ctx, b.client)
	if watchErr != nil {
		return r, watchErr
	}
	r.domainWatchBytes, r.domainWatchEvents = watchAfter.bytes-watchBefore.bytes, watchAfter.events-watchBefore.events
	var auditErr error
	if r.audited, auditErr = b.audit(from, time.Now()); auditErr != nil {
		return r, auditErr
	}
	if profErr != nil {
		return r, profErr
	}
	if err != nil {
		return r, fmt.Errorf("domain %s not formed within %s (Ready after %s, all pods Running after %s): %w\n%s",
			name, b.timeout, r.toReady, r.toRunning, err, b.diagnose(context.WithoutCancel(ctx), name))
	}
	if r.retried, r.failedPrepares, err = b.failedPrepares(ctx, name); err != nil {
		return r, err
	}
	return r, b.teardown(ctx, name)
}

// watchSent is what the API server has sent watchers of one resource since it started.
type watchSent struct{ bytes, events float64 }

// domainWatchSent reads the API server's metrics for what it has sent ComputeDomain watchers
// (apiserver_watch_events_sizes' sum and apiserver_watch_events_total, over their series).
func domainWatchSent(ctx context.Context, client kubernetes.Interface) (watchSent, error) {
	families, err := apiServerMetrics(ctx, client.CoreV1().RESTClient())
	if err != nil {
		return watchSent{}, err
	}
	ofDomains := func(m *dto.Metric) bool {
		return labelValue(m, "group") == cdv1beta1.GroupVersion.Group && labelValue(m, "resource") == computeDomains.Resource
	}
	var sent watchSent
	for _, m := range families["apiserver_watch_events_sizes"].GetMetric() {
		if ofDomains(m) {
			sent.bytes += m.GetHistogram().GetSampleSum()
		}
	}
	for _, m := range families["apiserver_watch_events_total"].GetMetric() {
		if ofDomains(m) {
			sent.events += m.GetCounter().GetValue()
		}
	}
	return sent, nil
}

// failedPrepares counts the run's pods with a FailedPrepareDynamicResources event, and the events with their
// repeats: every such pod waited for a retry of its prepare.
func (b formationBench) failedPrepares(ctx context.Context, name string) (pods, events int, err error) {
	list, err := b.client.CoreV1().Events(benchNamespace).List(ctx, metav1.ListOptions{
		FieldSelector: "reason=" + failedPrepareReason + ",involvedObject.kind=Pod",
	})
	if err != nil {
		return 0, 0, fmt.Errorf("list the events of failed prepares: %w", err)
	}
	seen := map[string]bool{}
	for _, e := range list.Items {
		if e.Reason != failedPrepareReason || e.InvolvedObject.Kind != "Pod" || !strings.HasPrefix(e.InvolvedObject.Name, name+"-") {
			continue
		}
		seen[e.InvolvedObject.Name] = true
		events += int(max(1, e.Count))
		if e.Series != nil {
			events += int(e.Series.Count) - 1
		}
	}
	return len(seen), events, nil
}

// failedPrepareReason is the kubelet's event reason for a failed NodePrepareResources.
const failedPrepareReason = "FailedPrepareDynamicResources"

func (b formationBench) teardown(ctx context.Context, name string) error {
	background := metav1.DeletePropagationBackground
	if err := b.client.BatchV1().Jobs(benchNamespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		return err
	}
	if err := b.dyn.Resource(computeDomains).Namespace(benchNamespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, b.timeout, true, func(ctx context.Context) (bool, error) {
		if _, err := b.dyn.Resource(computeDomains).Namespace(benchNamespace).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return false, nil
		}
		pods, err := b.client.CoreV1().Pods(benchNamespace).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("domain %s not torn down within %s: %w", name, b.timeout, err)
	}
	// Let our components' last teardown writes land before the next run
	// counts: a second without any.
	return wait.PollUntilContextTimeout(ctx, time.Second, b.timeout, false, func(context.Context) (bool, error) {
		quiet := len(b.counter.snapshot().writes) == 0
		b.counter.reset()
		return quiet, nil
	})
}

// gpuClaimTemplate: all 4 GPUs of a GB200 tray.
func gpuClaimTemplate() *resourcev1.ResourceClaimTemplate {
	return &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "four-gpus"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpus", Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: "gpu.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 4,
			}}},
		}}},
	}
}

// formationJob: n pods, one per node (required anti-affinity on the
// hostname), each with 4 GPUs and the domain's channel.
func formationJob(name string, n int) *batchv1.Job {
	count := int32(n)
	indexed := batchv1.IndexedCompletion
	zero := int32(0)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			Completions: &count, Parallelism: &count, CompletionMode: &indexed, BackoffLimit: &zero,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"job-name": name}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
							LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"job-name": name}},
							TopologyKey:   corev1.LabelHostname,
						}},
					}},
					Containers: []corev1.Container{{
						Name: "ctr", Image: "ubuntu:24.04", Command: []string{"bash", "-c", "nvidia-smi -L; sleep infinity"},
						Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpus"}, {Name: "imex-channel"}}},
					}},
					ResourceClaims: []corev1.PodResourceClaim{
						{Name: "gpus", ResourceClaimTemplateName: new("four-gpus")},
						{Name: "imex-channel", ResourceClaimTemplateName: new(name + "-channel")},
					},
				},
			},
		},
	}
}

// printFormationTable prints medians over the runs: times, writes per
// component kind (total and per node), conflicts, and where writes come from.
func printFormationTable(w io.Writer, runs []formationRun, nodes, racks int) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	seconds := func(f func(formationRun) time.Duration) string {
		var vals []float64
		for _, r := range runs {
			vals = append(vals, f(r).Seconds())
		}
		return fmt.Sprintf("%.2f s\t%s", median(vals), joinFloats(vals, "%.2f", " "))
	}
	count := func(f func(formationRun) float64, format string) string {
		var vals []float64
		for _, r := range runs {
			vals = append(vals, f(r))
		}
		return fmt.Sprintf(format+"\t%s", median(vals), joinFloats(vals, format, " "))
	}
	kinds := []string{simcluster.ControllerComponent, simcluster.ComputeDomainPluginName, "compute-domain-daemon", simcluster.GPUPluginName}
	writesOf := func(r formationRun, kind string) float64 {
		n := 0
		for comp, byCall := range r.counts.writes {
			if kind == "" || componentKind(comp) == kind {
				for _, c := range byCall {
					n += c
				}
			}
		}
		return float64(n)
	}
	_, _ = fmt.Fprintf(tw, "ComputeDomain formation: %d pods on %d nodes over %d racks, %d runs\tmedian\truns\n", nodes, nodes, racks, len(runs))
	_, _ = fmt.Fprintf(tw, "Job created → all pods bound to nodes\t%s\n", seconds(func(r formationRun) time.Duration { return r.toScheduled }))
	_, _ = fmt.Fprintf(tw, "Job created → domain Ready\t%s\n", seconds(func(r formationRun) time.Duration { return r.toReady }))
	_, _ = fmt.Fprintf(tw, "Job created → all pods Running\t%s\n", seconds(func(r formationRun) time.Duration { return r.toRunning }))
	_, _ = fmt.Fprintf(tw, "last pod bound → all pods Running (target ≤ 5 s at 256 nodes, ≤ 10 s at 1,024)\t%s\n", seconds(func(r formationRun) time.Duration { return r.boundToRunning() }))
	_, _ = fmt.Fprintf(tw, "pods that needed a prepare retry (target 0)\t%s\n", count(func(r formationRun) float64 { return float64(r.retried) }, "%.0f"))
	_, _ = fmt.Fprintf(tw, "failed prepares (FailedPrepareDynamicResources events)\t%s\n", count(func(r formationRun) float64 { return float64(r.failedPrepares) }, "%.0f"))
	_, _ = fmt.Fprintf(tw, "last pod bound → domain Ready (0: Ready before the last bind)\t%s\n", seconds(func(r formationRun) time.Duration { return r.boundToReady() }))
	_, _ = fmt.Fprintf(tw, "controller CPU, Job created → formed\t%s\n", seconds(func(r formationRun) time.Duration { return r.controllerCPU }))
	_, _ = fmt.Fprintf(tw, "controller CPU per node\t%s\n", count(func(r formationRun) float64 {
		return float64(r.controllerCPU.Microseconds()) / 1000 / float64(nodes)
	}, "%.2f ms"))
	for _, kind := range kinds {
		_, _ = fmt.Fprintf(tw, "API writes: %s\t%s\n", kind, count(func(r formationRun) float64 { return writesOf(r, kind) }, "%.0f"))
	}
	_, _ = fmt.Fprintf(tw, "API writes per node, our components (target ≤ 3)\t%s\n", count(func(r formationRun) float64 { return writesOf(r, "") / float64(nodes) }, "%.2f"))
	_, _ = fmt.Fprintf(tw, "API writes per node, API server's audit log (target ≤ 3)\t%s\n", count(func(r formationRun) float64 {
		w, _, _ := r.auditedWrites()
		return float64(w) / float64(nodes)
	}, "%.2f"))
	_, _ = fmt.Fprintf(tw, "HTTP 409 / 429 answers to our components, audit log (target 0)\t%s\n", count(func(r formationRun) float64 {
		_, c, t := r.auditedWrites()
		return float64(c + t)
	}, "%.0f"))
	statusWrites := func(r formationRun) float64 {
		n := 0
		for comp, byCall := range r.counts.writes {
			if componentKind(comp) == simcluster.ControllerComponent {
				n += byCall["PATCH computedomains/status"]
			}
		}
		return float64(n)
	}
	_, _ = fmt.Fprintf(tw, "ComputeDomain status writes\t%s\n", count(statusWrites, "%.0f"))
	_, _ = fmt.Fprintf(tw, "ComputeDomain watch events sent by the API server\t%s\n", count(func(r formationRun) float64 { return r.domainWatchEvents }, "%.0f"))
	_, _ = fmt.Fprintf(tw, "ComputeDomain watch events per status write\t%s\n", count(func(r formationRun) float64 { return r.domainWatchEvents / max(1, statusWrites(r)) }, "%.0f"))
	_, _ = fmt.Fprintf(tw, "ComputeDomain watch bytes sent by the API server\t%s\n", count(func(r formationRun) float64 { return r.domainWatchBytes / 1e6 }, "%.1f MB"))
	_, _ = fmt.Fprintf(tw, "HTTP 409 conflicts (target 0)\t%s\n", count(func(r formationRun) float64 {
		n := 0
		for _, c := range r.counts.conflicts {
			n += c
		}
		return float64(n)
	}, "%.0f"))
	_ = tw.Flush()

	conflicts := map[string][]string{}
	for i, r := range runs {
		for call, n := range r.counts.conflicts {
			kind := componentKind(strings.Fields(call)[0])
			conflicts[kind] = append(conflicts[kind], fmt.Sprintf("run %d: %d × %s", i+1, n, call))
		}
	}
	if len(conflicts) > 0 {
		_, _ = fmt.Fprintln(w, "\nHTTP 409 conflicts by component:")
		for _, kind := range append(kinds, "") {
			if len(conflicts[kind]) > 0 {
				_, _ = fmt.Fprintf(w, "  %s: %s\n", kind, strings.Join(conflicts[kind], ", "))
			}
		}
	}

	// Which of our writes the API server refused with 409 or 429 (client-go retries a 429 on its own, so
	// only the audit log shows them).
	var refused []string
	for i, r := range runs {
		byCall := map[string]int{}
		for _, a := range r.audited {
			if a.Code == 409 || a.Code == 429 {
				byCall[fmt.Sprintf("%d %s %s", a.Code, a.ServiceAccount, a.Call)]++
			}
		}
		for call, n := range byCall {
			refused = append(refused, fmt.Sprintf("run %d: %d × %s", i+1, n, call))
		}
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		_, _ = fmt.Fprintf(w, "\nHTTP 409/429 answers in the audit log: %s\n", strings.Join(refused, ", "))
	}

	// Where the writes come from (last run).
	last := runs[len(runs)-1].counts
	calls := map[string]int{}
	for comp, byCall := range last.writes {
		for call, n := range byCall {
			calls[componentKind(comp)+": "+call] += n
		}
	}
	keys := make([]string, 0, len(calls))
	for k := range calls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	_, _ = fmt.Fprintln(w, "\nwrites by component and call (last run):")
	for _, k := range keys {
		_, _ = fmt.Fprintf(w, "  %-70s %d\n", k, calls[k])
	}
}

// median is the median of vals (0 when there are none).
func median(vals []float64) float64 {
	if len(vals) == 0 {
		return 0
	}
	s := append([]float64{}, vals...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// joinFloats formats each of vals and joins them with sep.
func joinFloats(vals []float64, format, sep string) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = fmt.Sprintf(format, v)
	}
	return strings.Join(parts, sep)
}

// diagnose says where a formation that timed out stands: the domain's status and conditions, the workload pods
// and the long-lived IMEX daemons by phase (with the reason of a few that are not running).
func (b formationBench) diagnose(ctx context.Context, name string) string {
	var out strings.Builder
	if cd, err := b.dyn.Resource(computeDomains).Namespace(benchNamespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
		fmt.Fprintf(&out, "  domain: %v\n", err)
	} else {
		status, _, _ := unstructured.NestedString(cd.Object, "status", "status")
		ready, _, _ := unstructured.NestedInt64(cd.Object, "status", "readyNodes")
		total, _, _ := unstructured.NestedInt64(cd.Object, "status", "totalNodes")
		fmt.Fprintf(&out, "  domain: status %q, %d of %d nodes ready\n", status, ready, total)
		conds, _, _ := unstructured.NestedSlice(cd.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok {
				fmt.Fprintf(&out, "    %v=%v %v: %.300v\n", m["type"], m["status"], m["reason"], m["message"])
			}
		}
	}
	pods := func(ns, selector, what string) {
		list, err := b.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			fmt.Fprintf(&out, "  %s: %v\n", what, err)
			return
		}
		phases := map[corev1.PodPhase]int{}
		var stuck []string
		for _, p := range list.Items {
			phases[p.Status.Phase]++
			if p.Status.Phase == corev1.PodRunning || len(stuck) >= 3 {
				continue
			}
			why := string(p.Status.Phase)
			for _, c := range p.Status.Conditions {
				if c.Status != corev1.ConditionTrue && c.Message != "" {
					why = fmt.Sprintf("%s %s: %.200s", c.Type, c.Reason, c.Message)
					break
				}
			}
			stuck = append(stuck, fmt.Sprintf("%s on %q: %s", p.Name, p.Spec.NodeName, why))
		}
		fmt.Fprintf(&out, "  %s: %d, by phase %v\n", what, len(list.Items), phases)
		for _, s := range stuck {
			fmt.Fprintf(&out, "    %s\n", s)
		}
	}
	pods(benchNamespace, "job-name="+name, "workload pods")
	pods(simcluster.OperatorNamespace, simcluster.CliqueDaemonSelector, "long-lived IMEX daemon pods")
	return out.String()
}

// waitForCliqueDaemons waits until the long-lived IMEX daemons report ready on nodes
// nodes and their cliques' ensembles list them all: the state a cluster is in long before a job arrives.
func waitForCliqueDaemons(ctx context.Context, dyn dynamic.Interface, nodes int, timeout time.Duration) error {
	imexNodes := cdv1beta1.GroupVersion.WithResource("imexnodes")
	imexCliques := cdv1beta1.GroupVersion.WithResource("imexcliques")
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := dyn.Resource(imexNodes).Namespace(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, n := range list.Items {
			if r, _, _ := unstructured.NestedBool(n.Object, "status", "ready"); r {
				ready++
			}
		}
		cliques, err := dyn.Resource(imexCliques).Namespace(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		listed := int64(0)
		for _, q := range cliques.Items {
			t, _, _ := unstructured.NestedInt64(q.Object, "status", "totalNodes")
			listed += t
		}
		return ready >= nodes && listed >= int64(nodes), nil
	})
	if err != nil {
		return fmt.Errorf("long-lived IMEX daemons not ready on %d nodes within %s: %w", nodes, timeout, err)
	}
	return nil
}

// boundToReady is the time from the last workload pod bound to the domain Ready (0 when it was Ready first).
func (r formationRun) boundToReady() time.Duration { return max(0, r.toReady-r.toScheduled) }

// boundToRunning is the time from the last workload pod bound to all of them Running: what a user waits for
// once the scheduler is done.
func (r formationRun) boundToRunning() time.Duration { return max(0, r.toRunning-r.toScheduled) }

// formationJSON is what bench formation --json writes and bench plot reads.
type formationJSON struct {
	Nodes int              `json:"nodes"`
	Racks int              `json:"racks"`
	Runs  []formationPoint `json:"runs"`
}

// formationPoint is one run, in seconds and counts.
type formationPoint struct {
	Bound          float64 `json:"jobToAllPodsBoundSeconds"`
	Ready          float64 `json:"jobToReadySeconds"`
	Running        float64 `json:"jobToAllPodsRunningSeconds"`
	BoundToReady   float64 `json:"lastPodBoundToReadySeconds"`
	BoundToRunning float64 `json:"lastPodBoundToAllPodsRunningSeconds"`
	Retried        int     `json:"podsWithAPrepareRetry"`
	FailedPrepares int     `json:"failedPrepareEvents"`
	WritesPerNode  float64 `json:"auditedWritesPerNode"`
	ConflictsOr429 int     `json:"audited409or429"`
	// ControllerCPU is absent in the files of runs before issue 27.
	ControllerCPU float64 `json:"controllerCPUSeconds,omitempty"`
	// DomainWatchBytes and DomainWatchEvents are absent in the files of runs before December 6, 2026.
	DomainWatchBytes  float64 `json:"domainWatchBytes,omitempty"`
	DomainWatchEvents float64 `json:"domainWatchEvents,omitempty"`
}

func writeFormationJSON(path string, runs []formationRun, nodes int, cf clustercli.Flags) error {
	out := formationJSON{Nodes: nodes, Racks: cf.Racks}
	for _, r := range runs {
		w, c, t := r.auditedWrites()
		out.Runs = append(out.Runs, formationPoint{
			Bound: r.toScheduled.Seconds(), Ready: r.toReady.Seconds(), Running: r.toRunning.Seconds(),
			BoundToReady: r.boundToReady().Seconds(), BoundToRunning: r.boundToRunning().Seconds(),
			Retried: r.retried, FailedPrepares: r.failedPrepares, WritesPerNode: float64(w) / float64(nodes), ConflictsOr429: c + t,
			ControllerCPU: r.controllerCPU.Seconds(), DomainWatchBytes: r.domainWatchBytes, DomainWatchEvents: r.domainWatchEvents,
		})
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
