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
	"strings"
	"text/tabwriter"
	"time"

	"github.com/computedomain-operator/computedomain-operator/e2e/cmd/internal/clustercli"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/nodeagent"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

const demoNamespace = "demo"

// demoRow is one line of the final table.
type demoRow struct {
	step, pod, node, devices, phase string
	took                            time.Duration
}

type demo struct {
	out     io.Writer
	start   time.Time
	root    string
	cluster *simcluster.Cluster
	client  kubernetes.Interface
	applier *simcluster.Applier
	// restConfig is the demo clients' configuration.
	restConfig *rest.Config
	rows       []demoRow
	timeout    time.Duration
	// racks is the racks picture the demo ends with; racksSVG where its SVG goes.
	racks    *racksPicture
	racksSVG string
}

func (d *demo) progress(format string, args ...any) {
	_, _ = fmt.Fprintf(d.out, "[%6.2fs] %s\n", time.Since(d.start).Seconds(), fmt.Sprintf(format, args...))
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("simcluster demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf clustercli.Flags
	cf.Register(fs, 2, cdv1beta1.NVL72CliqueSize, "hgx-h100-8:2,a100-40gb-mig:2")
	if err := fs.Set("job-run-duration", "3s"); err != nil {
		return err
	}
	timeout := fs.Duration("step-timeout", time.Minute, "how long one demo step may take")
	racksSVG := fs.String("racks-svg", filepath.Join("bin", "demo-racks.svg"), "where the demo writes its racks picture as SVG (relative: to the repository root; empty: nowhere)")
	ctx, d, err := startDemo(ctx, fs, &cf, args, stdout, stderr)
	if err != nil {
		return err
	}
	defer clustercli.StopQuietly(d.cluster)
	d.timeout = *timeout
	d.racksSVG = *racksSVG
	install, err := describeInstall(ctx, d.client)
	if err != nil {
		return err
	}
	d.progress("%s", install)

	if _, err := d.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", demoNamespace, err)
	}
	steps := []func(context.Context) error{d.gpuClaim, d.extendedResource, d.migClaim, d.gpuJob, d.gang, d.unprepareOnDelete, d.computeDomainJob}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			d.printTable()
			return err
		}
	}
	d.printTable()
	if err := d.printRacks(); err != nil {
		return err
	}
	d.progress("demo finished successfully")
	return nil
}

// startDemo parses a demo's flags, starts the simulated cluster they describe with the demo's clients, and says
// so; the caller stops d.cluster.
func startDemo(ctx context.Context, fs *flag.FlagSet, cf *clustercli.Flags, args []string, stdout, stderr io.Writer) (context.Context, *demo, error) {
	if err := fs.Parse(args); err != nil {
		return ctx, nil, err
	}
	cfg, err := cf.Config()
	if err != nil {
		return ctx, nil, err
	}
	root, err := simcluster.RepoRoot()
	if err != nil {
		return ctx, nil, err
	}
	ctx = clustercli.WithLogger(ctx, cf.Logger(stderr))
	d := &demo{out: stdout, start: time.Now(), root: root}

	d.progress("starting a simulated cluster: %d racks x %d %s, extra %q", cf.Racks, cf.NodesPerRack, cf.Profile, cf.Extra)
	d.cluster, err = simcluster.Start(ctx, cfg)
	if err != nil {
		return ctx, nil, fmt.Errorf("start cluster: %w", err)
	}
	// The demo's own clients do not print API deprecation warnings (the
	// Workload API's PodGroup v1beta1 has one) between the progress lines.
	restConfig := d.cluster.RESTConfig()
	restConfig.WarningHandler = rest.NoWarnings{}
	d.restConfig = restConfig
	if d.client, err = kubernetes.NewForConfig(restConfig); err == nil {
		d.applier, err = simcluster.NewApplier(restConfig)
	}
	if err != nil {
		clustercli.StopQuietly(d.cluster)
		return ctx, nil, err
	}
	var phases []string
	for _, t := range d.cluster.Timings() {
		phases = append(phases, fmt.Sprintf("%s %.2fs", t.Phase, t.Duration.Seconds()))
	}
	d.progress("cluster ready: %d nodes (%s); %s", len(d.cluster.Nodes()), clustercli.DescribeNodes(d.cluster.Nodes()), strings.Join(phases, ", "))
	return ctx, d, nil
}

// gpuClaim: a pod with one GPU reaches Running with its CDI edits.
func (d *demo) gpuClaim(ctx context.Context) error {
	pod, took, err := d.runPod(ctx, "demo/gpu-claim.yaml", "gpu-pod")
	if err != nil {
		return fmt.Errorf("GPU claim: %w", err)
	}
	devices, err := simcluster.PodDevices(ctx, d.client, pod)
	if err != nil || len(devices) != 1 {
		return fmt.Errorf("GPU claim: want 1 allocated device, got %d: %w", len(devices), err)
	}
	edits, err := nodeagent.DecodeCDIEdits(pod.Annotations)
	if err != nil {
		return fmt.Errorf("GPU claim: %w", err)
	}
	uuid := devices[0].StringAttribute("uuid")
	if uuid == "" || !envHasValue(edits["ctr"].Env, uuid) || len(edits["ctr"].DeviceNodes) == 0 {
		return fmt.Errorf("GPU claim: container edits %+v lack the allocated GPU %s (an env value and a device node)", edits["ctr"], uuid)
	}
	d.progress("GPU claim: pod %s Running on %s in %.2fs with %s (%s); container gets %s and %s",
		pod.Name, pod.Spec.NodeName, took.Seconds(), devices[0].Device, uuid, strings.Join(edits["ctr"].Env, " "), deviceNodes(edits["ctr"]))
	d.rows = append(d.rows, demoRow{"GPU claim", pod.Name, pod.Spec.NodeName, devices[0].Device, string(pod.Status.Phase), took})
	return nil
}

// extendedResource: an unmodified `nvidia.com/gpu: 1` pod is served by DRA.
func (d *demo) extendedResource(ctx context.Context) error {
	pod, took, err := d.runPod(ctx, "demo/extended-resource.yaml", "legacy-gpu-pod")
	if err != nil {
		return fmt.Errorf("extended resource: %w", err)
	}
	devices, err := simcluster.PodDevices(ctx, d.client, pod)
	if err != nil {
		return fmt.Errorf("extended resource: %w", err)
	}
	if len(devices) != 1 {
		return fmt.Errorf("extended resource: want 1 allocated device, got %d", len(devices))
	}
	d.progress("extended resource: unmodified pod %s asking nvidia.com/gpu: 1 Running on %s in %.2fs with %s through claim %s",
		pod.Name, pod.Spec.NodeName, took.Seconds(), devices[0].Device, devices[0].Claim)
	d.rows = append(d.rows, demoRow{"nvidia.com/gpu: 1 (DRA)", pod.Name, pod.Spec.NodeName, devices[0].Device, string(pod.Status.Phase), took})
	return nil
}

// migClaim: two MIG devices constrained to one parent GPU.
func (d *demo) migClaim(ctx context.Context) error {
	pod, took, err := d.runPod(ctx, "demo/mig-claim.yaml", "mig-pod")
	if err != nil {
		return fmt.Errorf("MIG claim: %w", err)
	}
	devices, err := simcluster.PodDevices(ctx, d.client, pod)
	if err != nil || len(devices) != 2 {
		return fmt.Errorf("MIG claim: want 2 allocated devices, got %d: %w", len(devices), err)
	}
	p0, p1 := devices[0].StringAttribute("parentUUID"), devices[1].StringAttribute("parentUUID")
	if p0 == "" || p0 != p1 {
		return fmt.Errorf("MIG claim: devices %s and %s have parents %q and %q, want one GPU", devices[0].Device, devices[1].Device, p0, p1)
	}
	d.progress("MIG claim: pod %s Running on %s in %.2fs with %s + %s, both on parent %s",
		pod.Name, pod.Spec.NodeName, took.Seconds(), devices[0].Device, devices[1].Device, p0)
	d.rows = append(d.rows, demoRow{"MIG claim (same parentUUID)", pod.Name, pod.Spec.NodeName, devices[0].Device + "," + devices[1].Device, string(pod.Status.Phase), took})
	return nil
}

// gpuJob: a Job of two GPU pods completes.
func (d *demo) gpuJob(ctx context.Context) error {
	start := time.Now()
	if _, err := d.applier.CreateFromFile(ctx, demoNamespace, filepath.Join(d.root, "demo/gpu-job.yaml")); err != nil {
		return fmt.Errorf("GPU job: %w", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, d.timeout, true, func(ctx context.Context) (bool, error) {
		job, err := d.client.BatchV1().Jobs(demoNamespace).Get(ctx, "gpu-job", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if job.Status.Failed > 0 {
			return false, fmt.Errorf("job has %d failed pods", job.Status.Failed)
		}
		return job.Status.Succeeded == 2, nil
	})
	if err != nil {
		return fmt.Errorf("GPU job: not complete within %s: %w", d.timeout, err)
	}
	took := time.Since(start)
	pods, err := d.client.CoreV1().Pods(demoNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=gpu-job"})
	if err != nil {
		return err
	}
	var nodes []string
	for _, p := range pods.Items {
		nodes = append(nodes, p.Spec.NodeName)
		d.rows = append(d.rows, demoRow{"GPU job", p.Name, p.Spec.NodeName, "1 gpu", string(p.Status.Phase), took})
	}
	d.progress("GPU job: 2 pods on %s completed, job succeeded in %.2fs", strings.Join(nodes, ", "), took.Seconds())
	return nil
}

// gang: a PodGroup of two GPU pods binds both or neither, in one clique.
func (d *demo) gang(ctx context.Context) error {
	if _, err := d.client.Discovery().ServerResourcesForGroupVersion("scheduling.k8s.io/v1beta1"); err != nil {
		d.progress("gang: skipped, the Workload API is off (--workload-api=false)")
		return nil
	}
	data, err := os.ReadFile(filepath.Join(d.root, "demo/gang-podgroup.yaml"))
	if err != nil {
		return err
	}
	objs, err := simcluster.DecodeManifests(data)
	if err != nil || len(objs) != 4 {
		return fmt.Errorf("gang: demo/gang-podgroup.yaml: want PodGroup, template and 2 pods: %w", err)
	}
	start := time.Now()
	if _, err := d.applier.Create(ctx, demoNamespace, objs[:3]); err != nil {
		return fmt.Errorf("gang: %w", err)
	}
	hold := time.Second
	time.Sleep(hold)
	lone, err := d.client.CoreV1().Pods(demoNamespace).Get(ctx, "gang-0", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("gang: %w", err)
	}
	if lone.Spec.NodeName != "" {
		return fmt.Errorf("gang: gang-0 was bound to %s before its sibling existed", lone.Spec.NodeName)
	}
	d.progress("gang: gang-0 alone stays unbound for %s (PodGroup minCount 2)", hold)
	if _, err := d.applier.Create(ctx, demoNamespace, objs[3:]); err != nil {
		return fmt.Errorf("gang: %w", err)
	}
	cliques := map[string]bool{}
	var nodes []string
	for _, name := range []string{"gang-0", "gang-1"} {
		pod, err := d.waitRunning(ctx, name)
		if err != nil {
			return fmt.Errorf("gang: %w", err)
		}
		node, err := d.client.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		clique := node.Labels[topology.CliqueLabel]
		cliques[clique] = true
		nodes = append(nodes, pod.Spec.NodeName)
		d.rows = append(d.rows, demoRow{"gang (one clique)", pod.Name, pod.Spec.NodeName, "1 gpu", string(pod.Status.Phase), time.Since(start)})
	}
	if len(cliques) != 1 || cliques[""] {
		return fmt.Errorf("gang: pods landed in cliques %v, want one", cliques)
	}
	d.progress("gang: with its sibling both pods run on %s, one NVLink clique, %.2fs after the PodGroup", strings.Join(nodes, ", "), time.Since(start).Seconds())
	return nil
}

// unprepareOnDelete: deleting the GPU pod unprepares its claim on the node.
func (d *demo) unprepareOnDelete(ctx context.Context) error {
	pod, err := d.client.CoreV1().Pods(demoNamespace).Get(ctx, "gpu-pod", metav1.GetOptions{})
	if err != nil {
		return err
	}
	devices, err := simcluster.PodDevices(ctx, d.client, pod)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := d.client.CoreV1().Pods(demoNamespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	var traces []string
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, d.timeout, true, func(ctx context.Context) (bool, error) {
		if _, err := d.client.CoreV1().Pods(demoNamespace).Get(ctx, pod.Name, metav1.GetOptions{}); err == nil {
			return false, nil
		}
		traces, err = d.cluster.ClaimTraces(pod.Spec.NodeName, devices[0].ClaimUID)
		return err == nil && len(traces) == 0, err
	})
	if err != nil {
		return fmt.Errorf("delete GPU pod: claim %s still prepared on %s (%v): %w", devices[0].Claim, pod.Spec.NodeName, traces, err)
	}
	took := time.Since(start)
	d.progress("delete: pod %s gone and claim %s unprepared on %s (no CDI spec, no checkpoint entry) in %.2fs",
		pod.Name, devices[0].Claim, pod.Spec.NodeName, took.Seconds())
	d.rows = append(d.rows, demoRow{"delete + unprepare", pod.Name, pod.Spec.NodeName, devices[0].Device, "Deleted", took})
	return nil
}

// runPod creates a demo manifest and waits for the named pod to run.
func (d *demo) runPod(ctx context.Context, manifest, name string) (*corev1.Pod, time.Duration, error) {
	start := time.Now()
	if _, err := d.applier.CreateFromFile(ctx, demoNamespace, filepath.Join(d.root, manifest)); err != nil {
		return nil, 0, err
	}
	pod, err := d.waitRunning(ctx, name)
	return pod, time.Since(start), err
}

// waitRunning waits for a demo pod to be Running.
func (d *demo) waitRunning(ctx context.Context, name string) (*corev1.Pod, error) {
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, d.timeout, true, func(ctx context.Context) (bool, error) {
		p, err := d.client.CoreV1().Pods(demoNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pod = p
		return p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		return nil, fmt.Errorf("pod %s not Running within %s (%s): %w", name, d.timeout, podSummary(pod), err)
	}
	return pod, nil
}

func podSummary(pod *corev1.Pod) string {
	if pod == nil {
		return "not created"
	}
	s := fmt.Sprintf("phase %s, node %q", pod.Status.Phase, pod.Spec.NodeName)
	for _, c := range pod.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			s += fmt.Sprintf(", %s: %s", c.Type, c.Message)
		}
	}
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Waiting != nil {
			s += fmt.Sprintf(", %s waiting: %s %s", c.Name, c.State.Waiting.Reason, c.State.Waiting.Message)
		}
	}
	return s
}

func (d *demo) printTable() {
	_, _ = fmt.Fprintln(d.out)
	tw := tabwriter.NewWriter(d.out, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "STEP\tPOD\tNODE\tDEVICES\tPHASE\tTIME")
	for _, r := range d.rows {
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.2fs\n", r.step, r.pod, r.node, r.devices, r.phase, r.took.Seconds())
	}
	_ = tw.Flush()
	_, _ = fmt.Fprintln(d.out)
}

// envHasValue: some variable of env has the value want.
func envHasValue(env []string, want string) bool {
	for _, e := range env {
		if _, v, _ := strings.Cut(e, "="); v == want {
			return true
		}
	}
	return false
}

func deviceNodes(e nodeagent.ContainerEdits) string {
	var paths []string
	for _, n := range e.DeviceNodes {
		paths = append(paths, n.Path)
	}
	return strings.Join(paths, ",")
}
