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
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/computedomain-operator/computedomain-operator/e2e/cmd/internal/clustercli"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/internal/sliceplan"
)

// placementVariant is one way to place the same multi-node job: a demo manifest and the names in it.
type placementVariant struct {
	name, manifest, domain, job string
	// elastic leaves the domain's spec.numNodes 0, so the webhook leaves its pods alone.
	elastic bool
	// workloadAPI: the variant runs only on a cluster that has the Workload API; fallback only on one without.
	workloadAPI, fallback bool
	// multiRack: the variant is for jobs larger than one rack (and only for them).
	multiRack bool
	// baseline: the other variants' figures are also given as ratios to this one's in the same run.
	baseline bool
}

var placementVariants = []placementVariant{
	// NVIDIA's way: required pod affinity on the clique label, no gang (and no webhook: numNodes 0).
	{name: "affinity", manifest: "demo/computedomain-job.yaml", domain: "imex-domain", job: "nccl-job", elastic: true, baseline: true},
	// Ours: the domain's PodGroup, a gang of numNodes in one clique, named in the pods.
	{name: "gang", manifest: "demo/computedomain-gang-job.yaml", domain: "gang-domain", job: "gang-job", workloadAPI: true},
	// An unmodified NVIDIA-style manifest that the webhook joins to the PodGroup.
	{name: "webhook-gang", manifest: "demo/computedomain-unmodified-job.yaml", domain: "gang-domain", job: "gang-job", workloadAPI: true},
	// The same without the Workload API: held by the webhook, released into one clique by the controller.
	{name: "clique-fallback", manifest: "demo/computedomain-unmodified-job.yaml", domain: "gang-domain", job: "gang-job", fallback: true},
	// A job larger than a rack, unmodified: planned as slices of consecutive ranks, each placed whole in a clique
	// and all or none (a CompositePodGroup of slice PodGroups, or without it the controller's fallback).
	{name: "slices", manifest: "demo/computedomain-unmodified-job.yaml", domain: "gang-domain", job: "gang-job", multiRack: true},
	// The same manifest with spec.numNodes 0: the webhook leaves its pods alone and the scheduler places them one
	// by one, as users of NVIDIA's driver get them.
	{name: "no-slices", manifest: "demo/computedomain-unmodified-job.yaml", domain: "gang-domain", job: "gang-job", elastic: true, multiRack: true, baseline: true},
}

// variantsFor are the variants a cluster with or without the Workload API runs, for a job of one rack or more.
func variantsFor(workloadAPI, multiRack bool) []placementVariant {
	var out []placementVariant
	for _, v := range placementVariants {
		if (v.workloadAPI && !workloadAPI) || (v.fallback && workloadAPI) || v.multiRack != multiRack {
			continue
		}
		out = append(out, v)
	}
	return out
}

// placementRun is one measured placement. A phase not reached by the timeout is 0.
type placementRun struct {
	variant string
	run     int
	// bound is Job created → every pod bound, running → every pod Running.
	bound, running time.Duration
	// cpu over Job created → every pod Running (or the timeout).
	cpu   cpuTimes
	check placementCheck
}

// placementOptions are bench placement's flags.
type placementOptions struct {
	cluster clustercli.Flags
	nodes   int
	runs    int
	timeout time.Duration
}

// runPlacement times Job creation → all pods bound and → all pods Running for the same N-node ComputeDomain job
// placed in several ways on an idle cluster with the chart's webhook.podGroups on, with the scheduler's CPU
// time, and checks where each run's pods went. A job that fits one rack is placed with NVIDIA's hand-written
// pod affinity and, with the Workload API, with the domain's gang PodGroup (named in the manifest, or set by the
// webhook), or, without it, by the controller's clique placement fallback. A larger job is placed in slices (by
// composite pod groups, or the fallback) and, for comparison, by the default scheduler alone.
func runPlacement(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench placement", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o placementOptions
	o.cluster.Register(fs, 4, 18, "")
	fs.IntVar(&o.nodes, "nodes", 16, "pods (one per tray, 4 GPUs each) of the job, and the domain's spec.numNodes; more than --nodes-per-rack runs the variants slices and no-slices, otherwise affinity, gang and webhook-gang (clique-fallback without the Workload API)")
	fs.IntVar(&o.runs, "runs", 3, "measurements of each variant, alternating which goes first")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "longest wait for one job's pods to be Running")
	if err := fs.Parse(args); err != nil {
		return err
	}
	perRack := o.cluster.NodesPerRack
	plan, err := sliceplan.New(o.nodes, perRack, 0)
	if err != nil {
		return fmt.Errorf("--nodes %d: %w", o.nodes, err)
	}
	if len(plan.Slices) > o.cluster.Racks {
		return fmt.Errorf("--nodes %d: allowed values are 1 to %d (%d racks of --nodes-per-rack %d; the job's %d slices need a rack each)",
			o.nodes, o.cluster.Racks*perRack, o.cluster.Racks, perRack, len(plan.Slices))
	}
	cfg, err := o.cluster.Config()
	if err != nil {
		return err
	}
	// The slice plan's clique size is the chart's, not the cluster's: racks smaller than NVL72's say so.
	cfg.ChartValues = map[string]any{
		"webhook":    map[string]any{"enabled": true, "podGroups": true},
		"controller": map[string]any{"maxNodesPerClique": perRack},
	}
	cfg.RunDuration = 24 * time.Hour // pods run until the run deletes them
	variants := variantsFor(o.cluster.WorkloadAPI, o.nodes > perRack)
	root, err := simcluster.RepoRoot()
	if err != nil {
		return err
	}
	ctx = clustercli.WithLogger(ctx, o.cluster.Logger(stderr))
	started := time.Now()
	cluster, err := simcluster.Start(ctx, cfg)
	if err != nil {
		return fmt.Errorf("start cluster: %w", err)
	}
	defer clustercli.StopQuietly(cluster)
	_, _ = fmt.Fprintf(stderr, "cluster of %d nodes ready in %.1fs\n", len(cluster.Nodes()), time.Since(started).Seconds())
	applier, err := simcluster.NewApplier(cluster.RESTConfig())
	if err != nil {
		return err
	}
	cliqueOf := map[string]string{}
	for _, n := range cluster.Nodes() {
		cliqueOf[n.Name] = n.CliqueID
	}
	p := placer{kube: cluster.Client(), applier: applier, root: root, opts: o, plan: plan, cliqueOf: cliqueOf}
	var results []placementRun
	for r := range o.runs {
		order := slices.Clone(variants)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, v := range order {
			res, err := p.placeOnce(ctx, v, r)
			if err != nil {
				return fmt.Errorf("%s run %d: %w", v.name, r, err)
			}
			_, _ = fmt.Fprintf(stderr, "%s run %d: %s\n", v.name, r, res.summary(o.nodes))
			results = append(results, res)
		}
	}
	if err := writePlacementTable(stdout, results, variants); err != nil {
		return err
	}
	var incomplete int
	for _, r := range results {
		if r.running == 0 {
			incomplete++
		}
	}
	if incomplete > 0 {
		return fmt.Errorf("%d of %d runs did not have all %d pods Running within %s", incomplete, len(results), o.nodes, o.timeout)
	}
	return nil
}

func (r placementRun) summary(nodes int) string {
	if r.running == 0 {
		return fmt.Sprintf("not all %d pods Running within the timeout (bound after %s; %d of the plan's ranks unbound; pods per clique %v)", nodes, r.bound, r.check.missing, r.check.placed)
	}
	return fmt.Sprintf("all %d pods bound in %.2fs, Running in %.2fs, scheduler CPU %.2fs, process CPU %.2fs, %d cliques, %d of %d blocks whole",
		nodes, r.bound.Seconds(), r.running.Seconds(), r.cpu.scheduler.Seconds(), r.cpu.process.Seconds(), len(r.check.placed), r.check.wholeBlocks, r.check.blocks)
}

// placer places one variant's job at a time on the benchmark's cluster.
type placer struct {
	kube     kubernetes.Interface
	applier  *simcluster.Applier
	root     string
	opts     placementOptions
	plan     sliceplan.Plan
	cliqueOf map[string]string
}

// placeOnce creates the variant's manifest resized to the job's size in a namespace of its own, waits until
// every pod is Running (or the timeout), reads where the pods went, and deletes the namespace again (waiting
// until it is gone, so the next run finds idle trays).
func (p placer) placeOnce(ctx context.Context, v placementVariant, run int) (placementRun, error) {
	objs, err := p.manifest(v)
	if err != nil {
		return placementRun{}, err
	}
	ns := fmt.Sprintf("bench-%s-%d", v.name, run)
	if _, err := p.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return placementRun{}, err
	}
	// Everything but the Job first: the domain and its PodGroups exist before the clock starts, as they do
	// when a user applies the manifest and the Job controller takes its time.
	var job, rest []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Job" {
			job = append(job, o)
		} else {
			rest = append(rest, o)
		}
	}
	if _, err := p.applier.Create(ctx, ns, rest); err != nil {
		return placementRun{}, err
	}
	time.Sleep(time.Second)
	watch := newJobWatch(p.opts.nodes)
	stopWatch, err := watch.start(ctx, p.kube, ns, v.job)
	if err != nil {
		return placementRun{}, err
	}
	defer stopWatch()
	meter, err := startCPUMeter()
	if err != nil {
		return placementRun{}, err
	}
	start := time.Now()
	_, err = p.applier.Create(ctx, ns, job)
	if err == nil {
		select {
		case <-watch.allRunning:
		case <-time.After(p.opts.timeout):
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	cpu, cpuErr := meter.stop()
	if err = errors.Join(err, cpuErr); err != nil {
		return placementRun{}, err
	}
	res := placementRun{variant: v.name, run: run, cpu: cpu}
	res.bound, res.running, res.check = watch.result(start, p.plan, p.cliqueOf)
	if err := p.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		return res, err
	}
	return res, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, p.opts.timeout, true, func(ctx context.Context) (bool, error) {
		_, err := p.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err != nil, nil
	})
}

// manifest is the variant's demo manifest resized to the job's size.
func (p placer) manifest(v placementVariant) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(filepath.Join(p.root, v.manifest))
	if err != nil {
		return nil, err
	}
	objs, err := simcluster.DecodeManifests(data)
	if err != nil {
		return nil, err
	}
	nodes := int64(p.opts.nodes)
	for _, o := range objs {
		switch o.GetKind() {
		case "ComputeDomain":
			numNodes := nodes
			if v.elastic {
				numNodes = 0
			}
			err = unstructured.SetNestedField(o.Object, numNodes, "spec", "numNodes")
		case "Job":
			if err = unstructured.SetNestedField(o.Object, nodes, "spec", "parallelism"); err == nil {
				err = unstructured.SetNestedField(o.Object, nodes, "spec", "completions")
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// jobWatch follows a job's pods through an informer and notes when all of them were first bound and Running.
type jobWatch struct {
	nodes int
	mu    sync.Mutex
	pods  map[string]*corev1.Pod
	// boundAt and runningAt are zero until reached.
	boundAt, runningAt time.Time
	allRunning         chan struct{}
}

func newJobWatch(nodes int) *jobWatch {
	return &jobWatch{nodes: nodes, pods: map[string]*corev1.Pod{}, allRunning: make(chan struct{})}
}

// start watches the pods labeled app.kubernetes.io/name=job in ns until the returned stop is called.
func (w *jobWatch) start(ctx context.Context, kube kubernetes.Interface, ns, job string) (stop func(), err error) {
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app.kubernetes.io/name=" + job }))
	informer := factory.Core().V1().Pods().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.observe(obj) },
		UpdateFunc: func(_, obj any) { w.observe(obj) },
	}); err != nil {
		return nil, err
	}
	watchCtx, cancel := context.WithCancel(ctx)
	factory.Start(watchCtx.Done())
	factory.WaitForCacheSync(watchCtx.Done())
	return func() { cancel(); factory.Shutdown() }, nil
}

func (w *jobWatch) observe(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pods[pod.Name] = pod
	var bound, running int
	for _, p := range w.pods {
		if p.Spec.NodeName != "" {
			bound++
		}
		if p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	if bound >= w.nodes && w.boundAt.IsZero() {
		w.boundAt = now
	}
	if running >= w.nodes && w.runningAt.IsZero() {
		w.runningAt = now
		close(w.allRunning)
	}
}

// result is Job created (start) → all bound and → all Running (0 when not reached), and the bound pods'
// placement against the plan.
func (w *jobWatch) result(start time.Time, plan sliceplan.Plan, cliqueOf map[string]string) (bound, running time.Duration, check placementCheck) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.boundAt.IsZero() {
		bound = w.boundAt.Sub(start)
	}
	if !w.runningAt.IsZero() {
		running = w.runningAt.Sub(start)
	}
	var pods []boundPod
	for _, p := range w.pods {
		if p.Spec.NodeName == "" {
			continue
		}
		rank, ok, err := sliceplan.RankOf(p.Labels, p.Annotations)
		if !ok || err != nil {
			rank = -1 // counted in its clique, in no block
		}
		pods = append(pods, boundPod{rank: rank, clique: cliqueOf[p.Spec.NodeName]})
	}
	return bound, running, checkPlacement(plan, pods)
}

// writePlacementTable writes every run, then per variant the medians, then each variant's figures as ratios to
// the baseline variant's in the same run, and their median.
func writePlacementTable(w io.Writer, results []placementRun, variants []placementVariant) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "VARIANT\tRUN\tJOB→ALL BOUND\tJOB→ALL RUNNING\tSCHEDULER CPU\tPROCESS CPU\tCLIQUES\tCONTIGUOUS\tWHOLE BLOCKS")
	for _, r := range results {
		contiguous := "no"
		if r.check.contiguous() {
			contiguous = "yes"
		}
		_, _ = fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.2fs\t%.2fs\t%d\t%s\t%d/%d\n", r.variant, r.run, phaseSeconds(r.bound), phaseSeconds(r.running),
			r.cpu.scheduler.Seconds(), r.cpu.process.Seconds(), len(r.check.placed), contiguous, r.check.wholeBlocks, r.check.blocks)
	}
	figures := []struct {
		name string
		of   func(placementRun) time.Duration
	}{
		{"JOB→ALL BOUND", func(r placementRun) time.Duration { return r.bound }},
		{"JOB→ALL RUNNING", func(r placementRun) time.Duration { return r.running }},
		{"SCHEDULER CPU", func(r placementRun) time.Duration { return r.cpu.scheduler }},
		{"PROCESS CPU", func(r placementRun) time.Duration { return r.cpu.process }},
	}
	for _, v := range variants {
		row := v.name + "\tmedian"
		for _, f := range figures {
			var d []float64
			for _, r := range results {
				if r.variant == v.name && f.of(r) > 0 {
					d = append(d, f.of(r).Seconds())
				}
			}
			row += "\t" + formatMedian(d, "%.2fs")
		}
		_, _ = fmt.Fprintln(tw, row+"\t\t\t")
	}
	var baseline string
	for _, v := range variants {
		if v.baseline {
			baseline = v.name
		}
	}
	base := map[int]placementRun{}
	for _, r := range results {
		if r.variant == baseline {
			base[r.run] = r
		}
	}
	for _, v := range variants {
		if v.name == baseline {
			continue
		}
		ratios := make([][]float64, len(figures))
		for _, r := range results {
			b, ok := base[r.run]
			if r.variant != v.name || !ok {
				continue
			}
			row := fmt.Sprintf("%s/%s\t%d", v.name, baseline, r.run)
			for i, f := range figures {
				if f.of(r) <= 0 || f.of(b) <= 0 {
					row += "\t-"
					continue
				}
				q := f.of(r).Seconds() / f.of(b).Seconds()
				ratios[i] = append(ratios[i], q)
				row += fmt.Sprintf("\t%.2f", q)
			}
			_, _ = fmt.Fprintln(tw, row+"\t\t\t")
		}
		row := fmt.Sprintf("%s/%s\tmedian", v.name, baseline)
		for i := range figures {
			row += "\t" + formatMedian(ratios[i], "%.2f")
		}
		_, _ = fmt.Fprintln(tw, row+"\t\t\t")
	}
	return tw.Flush()
}

// phaseSeconds is a phase's duration, or "-" when it was not reached.
func phaseSeconds(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// formatMedian is the median of values (the upper one of an even count), or "-" without any.
func formatMedian(values []float64, format string) string {
	if len(values) == 0 {
		return "-"
	}
	slices.Sort(values)
	return fmt.Sprintf(format, values[len(values)/2])
}
