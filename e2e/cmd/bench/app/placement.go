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
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/computedomain-operator/computedomain-operator/e2e/cmd/internal/clustercli"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
)

// placementVariant is one way to place the same multi-node job: a demo manifest and the names in it.
type placementVariant struct {
	name, manifest, domain, job string
	// elastic leaves the domain's spec.numNodes 0, so the webhook leaves its pods alone.
	elastic bool
	// workloadAPI: the variant runs only on a cluster that has the Workload API; fallback only on one without.
	workloadAPI, fallback bool
}

var placementVariants = []placementVariant{
	// NVIDIA's way: required pod affinity on the clique label, no gang (and no webhook: numNodes 0).
	{name: "affinity", manifest: "demo/computedomain-job.yaml", domain: "imex-domain", job: "nccl-job", elastic: true},
	// Ours: the domain's PodGroup, a gang of numNodes in one clique, named in the pods.
	{name: "gang", manifest: "demo/computedomain-gang-job.yaml", domain: "gang-domain", job: "gang-job", workloadAPI: true},
	// An unmodified NVIDIA-style manifest that the webhook joins to the PodGroup.
	{name: "webhook-gang", manifest: "demo/computedomain-unmodified-job.yaml", domain: "gang-domain", job: "gang-job", workloadAPI: true},
	// The same without the Workload API: held by the webhook, released into one clique by the controller.
	{name: "clique-fallback", manifest: "demo/computedomain-unmodified-job.yaml", domain: "gang-domain", job: "gang-job", fallback: true},
}

// variantsFor are the variants a cluster with or without the Workload API runs.
func variantsFor(workloadAPI bool) []placementVariant {
	var out []placementVariant
	for _, v := range placementVariants {
		if (v.workloadAPI && !workloadAPI) || (v.fallback && workloadAPI) {
			continue
		}
		out = append(out, v)
	}
	return out
}

// placementRun is one measured placement.
type placementRun struct {
	variant string
	run     int
	// bound is Job created → every pod bound (0 when not all were by the timeout); placed the pods bound by
	// then, per clique.
	bound  time.Duration
	placed map[string]int
}

// runPlacement times Job creation → all pods bound for the same N-node ComputeDomain job placed with
// NVIDIA's hand-written pod affinity and, with the Workload API, with the domain's gang PodGroup (named in the
// manifest, or set by the webhook), or, without it, by the controller's clique placement fallback, on an idle
// cluster with the chart's webhook.podGroups on.
func runPlacement(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench placement", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf clustercli.Flags
	cf.Register(fs, 4, 18, "")
	nodes := fs.Int("nodes", 16, "pods (one per tray, 4 GPUs each) of the job, and the domain's spec.numNodes")
	runs := fs.Int("runs", 3, "measurements of each variant, alternating which goes first")
	timeout := fs.Duration("timeout", 2*time.Minute, "longest wait for one job's pods to be bound")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *nodes < 1 || *nodes > cf.NodesPerRack {
		return fmt.Errorf("--nodes %d: allowed values are 1 to %d (--nodes-per-rack: the job fits in one rack)", *nodes, cf.NodesPerRack)
	}
	cfg, err := cf.Config()
	if err != nil {
		return err
	}
	if cfg.ChartValues == nil {
		cfg.ChartValues = map[string]any{}
	}
	cfg.ChartValues["webhook"] = map[string]any{"enabled": true, "podGroups": true}
	variants := variantsFor(cf.WorkloadAPI)
	cfg.RunDuration = 24 * time.Hour // pods run until the run deletes them
	root, err := simcluster.RepoRoot()
	if err != nil {
		return err
	}
	ctx = clustercli.WithLogger(ctx, cf.Logger(stderr))
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
	var results []placementRun
	for r := range *runs {
		order := slices.Clone(variants)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, v := range order {
			res, err := placeOnce(ctx, cluster.Client(), applier, filepath.Join(root, v.manifest), v, int64(*nodes), r, *timeout, cliqueOf)
			if err != nil {
				return fmt.Errorf("%s run %d: %w", v.name, r, err)
			}
			_, _ = fmt.Fprintf(stderr, "%s run %d: all %d pods bound in %.2fs\n", v.name, r, *nodes, res.bound.Seconds())
			results = append(results, res)
		}
	}
	return writePlacementTable(stdout, results)
}

// placeOnce creates the variant's manifest resized to nodes in a namespace of its own, waits until every pod
// is bound, and deletes the namespace again (waiting until it is gone, so the next run finds idle trays).
func placeOnce(ctx context.Context, kube kubernetes.Interface, applier *simcluster.Applier, manifest string, v placementVariant, nodes int64, run int, timeout time.Duration, cliqueOf map[string]string) (placementRun, error) {
	data, err := os.ReadFile(manifest)
	if err != nil {
		return placementRun{}, err
	}
	objs, err := simcluster.DecodeManifests(data)
	if err != nil {
		return placementRun{}, err
	}
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
			return placementRun{}, err
		}
	}
	ns := fmt.Sprintf("bench-%s-%d", v.name, run)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return placementRun{}, err
	}
	// Everything but the Job first: the domain and its PodGroup exist before the clock starts, as they do
	// when a user applies the manifest and the Job controller takes its time.
	var job []*unstructured.Unstructured
	var rest []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Job" {
			job = append(job, o)
		} else {
			rest = append(rest, o)
		}
	}
	if _, err := applier.Create(ctx, ns, rest); err != nil {
		return placementRun{}, err
	}
	time.Sleep(time.Second)
	start := time.Now()
	if _, err := applier.Create(ctx, ns, job); err != nil {
		return placementRun{}, err
	}
	res := placementRun{variant: v.name, run: run}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + v.job})
		if err != nil {
			return false, err
		}
		res.placed = map[string]int{}
		bound := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				bound++
				res.placed[cliqueOf[p.Spec.NodeName]]++
			}
		}
		return bound == int(nodes), nil
	})
	if err != nil {
		return res, fmt.Errorf("not all %d pods bound within %s: %v", nodes, timeout, res.placed)
	}
	res.bound = time.Since(start)
	if err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		return res, err
	}
	return res, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err != nil, nil
	})
}

func writePlacementTable(w io.Writer, results []placementRun) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "VARIANT\tRUN\tJOB→ALL BOUND\tCLIQUES")
	byVariant := map[string][]time.Duration{}
	for _, r := range results {
		_, _ = fmt.Fprintf(tw, "%s\t%d\t%.2fs\t%d\n", r.variant, r.run, r.bound.Seconds(), len(r.placed))
		byVariant[r.variant] = append(byVariant[r.variant], r.bound)
	}
	names := make([]string, 0, len(byVariant))
	for n := range byVariant {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d := byVariant[n]
		slices.Sort(d)
		_, _ = fmt.Fprintf(tw, "%s\tmedian\t%.2fs\t\n", n, d[len(d)/2].Seconds())
	}
	return tw.Flush()
}
