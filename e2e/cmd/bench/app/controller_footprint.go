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
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain"
	"github.com/computedomain-operator/computedomain-operator/internal/testing/envtest"
)

// childEnv set to 1 makes this binary (or the test binary) run the controller instead of the benchmark.
const childEnv = "BENCH_CONTROLLER_CHILD"

func isControllerChild() bool { return os.Getenv(childEnv) == "1" }

const operatorNamespace = "computedomain-operator"

// footprintOptions are the flags.
type footprintOptions struct {
	domains, nodes, namespaces, workers int
	timeout                             time.Duration
	// controllerArgs are more flags of the controller (e.g. its client rate limit).
	controllerArgs []string
	// profileDir, when set, gets the controller's CPU profile of the formation phase and its heap when settled.
	profileDir string
}

// footprint is what one run measured.
type footprint struct {
	peakRSS, rss    int64 // bytes: VmHWM and VmRSS when settled
	reconciles      int   // controller_runtime_reconcile_total, all results
	reconcileErrors int
	p50, p99        time.Duration // from controller_runtime_reconcile_time_seconds, interpolated in its buckets
	p99Bucket       float64       // upper bound of the bucket holding the p99
	// mean is exact (the histogram's sum over its count); over50ms counts the reconciles above the goal's
	// 50 ms, exact too since 50 ms is a bucket bound: the p99 meets the goal when at most 1 % are above.
	mean                   time.Duration
	over50ms, ofReconciles int
	settled, creating      time.Duration // first object written → settled; → last object written
	// The steady phase: once settled, every domain is touched once (an annotation, no change to act on)
	// and the reconciles of that phase alone are counted.
	steadyReconciles     int
	steadyP50, steadyP99 time.Duration
	steadySettled        time.Duration
	// requests are the controller's API requests by method (rest_client_requests_total), all phases.
	requests map[string]int
	// apiServer is what API Priority and Fairness did with the controller's requests and how long the API
	// server took for each of a new domain's calls, from the API server's metrics after the formation phase.
	apiServer apiServerFigures
	// client is how long the controller's calls of the formation phase took as it saw them.
	client clientLatencies
}

func runController(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench controller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o footprintOptions
	fs.IntVar(&o.domains, "domains", 1000, "ComputeDomains")
	fs.IntVar(&o.nodes, "nodes", 2000, "Node objects; each domain gets nodes/domains of them, with one allocated workload claim each")
	fs.IntVar(&o.namespaces, "namespaces", 10, "namespaces the domains are spread over")
	fs.IntVar(&o.workers, "workers", 16, "parallel API calls of the benchmark")
	fs.DurationVar(&o.timeout, "timeout", 15*time.Minute, "longest wait for the controller to settle")
	controllerArgs := fs.String("controller-args", "", "more flags of the controller, space-separated (e.g. \"--kube-api-qps=50 --kube-api-burst=100\")")
	fs.StringVar(&o.profileDir, "profile-dir", "", "directory for the controller's CPU profile of the formation phase (controller-cpu.pprof) and its heap when settled (controller-heap.pprof)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.controllerArgs = strings.Fields(*controllerArgs)
	switch {
	case o.domains < 1 || o.nodes < o.domains:
		return fmt.Errorf("--domains %d, --nodes %d: want at least one domain and a node per domain", o.domains, o.nodes)
	case o.namespaces < 1 || o.workers < 1:
		return fmt.Errorf("--namespaces %d, --workers %d: each must be at least 1", o.namespaces, o.workers)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	f, err := measureFootprint(ctx, o, exe, stderr)
	if err != nil {
		return err
	}
	printFootprint(stdout, o, f)
	return nil
}

// measureFootprint runs one benchmark with the controller started from exe (with childEnv=1).
func measureFootprint(ctx context.Context, o footprintOptions, exe string, progress io.Writer) (footprint, error) {
	env, err := envtest.Start()
	if err != nil {
		return footprint{}, err
	}
	defer func() { _ = env.Stop() }()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		return footprint{}, err
	}
	dir, err := os.MkdirTemp("", "bench-controller")
	if err != nil {
		return footprint{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := controllerIdentity(ctx, env, c, kubeconfig); err != nil {
		return footprint{}, err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}); err != nil {
		return footprint{}, err
	}
	for i := range o.namespaces {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: domainNamespace(i)}}); err != nil {
			return footprint{}, err
		}
	}

	ctrl, err := startController(ctx, exe, kubeconfig, filepath.Join(dir, "controller.log"), o.controllerArgs, o.profileDir != "")
	if err != nil {
		return footprint{}, err
	}
	defer ctrl.stop()
	stopProfile := func() error { return nil }
	if o.profileDir != "" {
		if stopProfile, err = ctrl.startCPUProfile(ctx, filepath.Join(o.profileDir, "controller-cpu.pprof")); err != nil {
			return footprint{}, err
		}
	}

	start := time.Now()
	if err := parallel(ctx, o.nodes, o.workers, func(i int) error {
		return c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName(i), Labels: map[string]string{
			corev1.LabelHostname: nodeName(i),
			// GB200 trays: 18 per NVLink clique (rack), as the GPU plugin labels them.
			v1beta1.CliqueNodeLabelKey: benchCliqueID(i),
		}}})
	}); err != nil {
		return footprint{}, fmt.Errorf("create nodes: %w", err)
	}
	_, _ = fmt.Fprintf(progress, "%d nodes written in %.1fs\n", o.nodes, time.Since(start).Seconds())
	perDomain := o.nodes / o.domains
	if err := parallel(ctx, o.domains, o.workers, func(i int) error {
		return createDomain(ctx, c, o, i, perDomain)
	}); err != nil {
		return footprint{}, err
	}
	created := time.Since(start)
	_, _ = fmt.Fprintf(progress, "%d domains and %d workload claims written in %.1fs; waiting for the controller to settle\n", o.domains, o.domains*perDomain, created.Seconds())
	if err := ctrl.settle(ctx, c, o); err != nil {
		return footprint{}, errors.Join(err, ctrl.logTail())
	}
	f := footprint{settled: time.Since(start), creating: created}
	if err := stopProfile(); err != nil {
		return footprint{}, err
	}
	if o.profileDir != "" {
		if err := ctrl.saveProfile(ctx, "heap", filepath.Join(o.profileDir, "controller-heap.pprof")); err != nil {
			return footprint{}, err
		}
	}
	if err := ctrl.read(&f); err != nil {
		return footprint{}, err
	}
	if f.apiServer, err = readAPIServer(ctx, cfg); err != nil {
		return footprint{}, err
	}
	before, err := ctrl.histogram()
	if err != nil {
		return footprint{}, err
	}
	_, _ = fmt.Fprintf(progress, "settled after %.1fs; touching every domain once\n", f.settled.Seconds())
	start = time.Now()
	if err := parallel(ctx, o.domains, o.workers, func(i int) error {
		cd := &v1beta1.ComputeDomain{ObjectMeta: metav1.ObjectMeta{Name: domainName(i), Namespace: domainNamespace(i % o.namespaces)}}
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"bench.computedomain.resource.nvidia.com/touched":"1"}}}`))
		return c.Patch(ctx, cd, patch)
	}); err != nil {
		return footprint{}, fmt.Errorf("touch domains: %w", err)
	}
	if err := ctrl.settle(ctx, c, o); err != nil {
		return footprint{}, errors.Join(err, ctrl.logTail())
	}
	f.steadySettled = time.Since(start)
	after, err := ctrl.histogram()
	if err != nil {
		return footprint{}, err
	}
	steady := histogramDelta(after, before)
	f.steadyReconciles = int(steady.GetSampleCount())
	p50, _ := histogramQuantile(steady, 0.50)
	p99, _ := histogramQuantile(steady, 0.99)
	f.steadyP50, f.steadyP99 = seconds(p50), seconds(p99)
	if err := ctrl.read(&f); err != nil {
		return footprint{}, err
	}
	return f, ctrl.exited()
}

// benchCliqueID is node i's NVLink clique: racks of 18 trays in one cluster.
func benchCliqueID(i int) string { return fmt.Sprintf("b3c7d3a0-0000-4000-8000-000000000001.%d", i/18) }

func domainNamespace(i int) string { return fmt.Sprintf("team-%03d", i) }
func nodeName(i int) string        { return fmt.Sprintf("node-%05d", i) }
func domainName(i int) string      { return fmt.Sprintf("cd-%05d", i) }

// createDomain creates domain i, waits for the controller's workload claim template, and creates the
// domain's workload claims from it, allocated on its nodes and reserved for a pod, as the ResourceClaim
// controller and the scheduler would leave them.
func createDomain(ctx context.Context, c client.Client, o footprintOptions, i, perDomain int) error {
	ns := domainNamespace(i % o.namespaces)
	name := domainName(i)
	cd := &v1beta1.ComputeDomain{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1beta1.ComputeDomainSpec{
			NumNodes: int32(perDomain),
			Channel:  v1beta1.ComputeDomainChannelSpec{ResourceClaimTemplate: v1beta1.ComputeDomainResourceClaimTemplate{Name: name + "-channel"}},
		},
	}
	if err := c.Create(ctx, cd); err != nil {
		return fmt.Errorf("create ComputeDomain %s/%s: %w", ns, name, err)
	}
	var tmpl resourcev1.ResourceClaimTemplate
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, o.timeout, true, func(ctx context.Context) (bool, error) {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: cd.Spec.Channel.ResourceClaimTemplate.Name}, &tmpl) == nil, nil
	}); err != nil {
		return fmt.Errorf("the controller made no workload claim template for %s/%s: %w", ns, name, err)
	}
	for k := range perDomain {
		node := nodeName(i*perDomain + k)
		claim := &resourcev1.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("%s-w%d-channel", name, k), Namespace: ns,
				Labels: tmpl.Spec.Labels, Annotations: tmpl.Spec.Annotations,
			},
			Spec: tmpl.Spec.Spec,
		}
		if err := c.Create(ctx, claim); err != nil {
			return fmt.Errorf("create workload claim: %w", err)
		}
		request := "channel"
		if len(claim.Spec.Devices.Requests) > 0 {
			request = claim.Spec.Devices.Requests[0].Name
		}
		claim.Status = resourcev1.ResourceClaimStatus{
			Allocation: &resourcev1.AllocationResult{
				Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
					Request: request, Driver: v1beta1.ComputeDomainDriverName, Pool: node, Device: "channel-0",
				}}},
				NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
					Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node},
				}}}}},
			},
			ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: fmt.Sprintf("%s-w%d", name, k), UID: types.UID(fmt.Sprintf("pod-%d-%d", i, k))}},
		}
		if err := c.Status().Update(ctx, claim); err != nil {
			return fmt.Errorf("allocate workload claim %s: %w", claim.Name, err)
		}
	}
	return nil
}

// controllerProcess is the controller running as a child process.
type controllerProcess struct {
	cmd     *exec.Cmd
	metrics string
	pprof   string // host:port of its /debug/pprof/, or empty
	logPath string
	done    chan struct{}
	err     error
}

func startController(ctx context.Context, exe, kubeconfig, logPath string, extraArgs []string, pprof bool) (*controllerProcess, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"--kubeconfig=" + kubeconfig, "--namespace=" + operatorNamespace, "--health-probe-bind-address=0"}
	pprofAddr := ""
	if pprof {
		pprofPort, err := freePort()
		if err != nil {
			return nil, err
		}
		pprofAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(pprofPort))
		args = append(args, "--pprof-bind-address="+pprofAddr)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args = append(append(args, "--metrics-bind-address="+addr), extraArgs...)
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start the controller: %w", err)
	}
	p := &controllerProcess{cmd: cmd, metrics: "http://" + addr + "/metrics", pprof: pprofAddr, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *controllerProcess) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("the controller exited: %w", p.err)
	default:
		return nil
	}
}

func (p *controllerProcess) stop() {
	if p.exited() == nil {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

func (p *controllerProcess) logTail() error {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return fmt.Errorf("controller log, last lines:\n%s", strings.Join(lines[max(0, len(lines)-20):], "\n"))
}

// settle waits until every domain's status has observed its generation, the controller's work queue is
// empty and its reconcile count has not moved for 3 s.
func (p *controllerProcess) settle(ctx context.Context, c client.Client, o footprintOptions) error {
	last, quiet := -1.0, 0
	return wait.PollUntilContextTimeout(ctx, time.Second, o.timeout, true, func(ctx context.Context) (bool, error) {
		if err := p.exited(); err != nil {
			return false, err
		}
		var list v1beta1.ComputeDomainList
		if err := c.List(ctx, &list); err != nil {
			return false, nil
		}
		observed := 0
		for _, cd := range list.Items {
			if cd.Status.ObservedGeneration == cd.Generation {
				observed++
			}
		}
		families, err := p.scrape()
		if err != nil {
			return false, nil
		}
		total := sumCounter(families["controller_runtime_reconcile_total"])
		depth := gaugeValue(families["workqueue_depth"], computedomain.ControllerName)
		if observed < o.domains || depth != 0 || total != last {
			last, quiet = total, 0
			return false, nil
		}
		quiet++
		return quiet >= 3, nil
	})
}

func (p *controllerProcess) scrape() (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(p.metrics) //nolint:gosec,noctx // the child's loopback endpoint
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// read fills in the RSS figures from /proc and the reconcile figures from the metrics endpoint.
func (p *controllerProcess) read(f *footprint) error {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return err
	}
	if f.peakRSS, err = procStatusBytes(status, "VmHWM"); err != nil {
		return err
	}
	if f.rss, err = procStatusBytes(status, "VmRSS"); err != nil {
		return err
	}
	families, err := p.scrape()
	if err != nil {
		return fmt.Errorf("scrape the controller's metrics: %w", err)
	}
	f.requests = map[string]int{}
	for _, m := range families["rest_client_requests_total"].GetMetric() {
		f.requests[labelValue(m, "method")] += int(m.GetCounter().GetValue())
	}
	f.reconciles, f.reconcileErrors = 0, 0
	for _, m := range families["controller_runtime_reconcile_total"].GetMetric() {
		n := int(m.GetCounter().GetValue())
		f.reconciles += n
		if labelValue(m, "result") == "error" {
			f.reconcileErrors += n
		}
	}
	h := histogramOf(families["controller_runtime_reconcile_time_seconds"], computedomain.ControllerName)
	if h == nil {
		return errors.New("no controller_runtime_reconcile_time_seconds histogram for " + computedomain.ControllerName)
	}
	if f.p99 != 0 {
		return nil // the formation phase's figures are read once
	}
	f.client = clientLatenciesFrom(families)
	var p50 float64
	p50, _ = histogramQuantile(h, 0.50)
	p99, bound := histogramQuantile(h, 0.99)
	f.p50, f.p99, f.p99Bucket = seconds(p50), seconds(p99), bound
	if n := h.GetSampleCount(); n > 0 {
		f.mean = seconds(h.GetSampleSum() / float64(n))
	}
	atMost50ms, err := cumulativeCount(h, 0.05)
	if err != nil {
		return err
	}
	f.ofReconciles = int(h.GetSampleCount())
	f.over50ms = f.ofReconciles - atMost50ms
	return nil
}

// histogram is the controller's reconcile time histogram now.
func (p *controllerProcess) histogram() (*dto.Histogram, error) {
	families, err := p.scrape()
	if err != nil {
		return nil, fmt.Errorf("scrape the controller's metrics: %w", err)
	}
	h := histogramOf(families["controller_runtime_reconcile_time_seconds"], computedomain.ControllerName)
	if h == nil {
		return nil, errors.New("no controller_runtime_reconcile_time_seconds histogram for " + computedomain.ControllerName)
	}
	return h, nil
}

// histogramDelta is the histogram of the observations made between before and after.
func histogramDelta(after, before *dto.Histogram) *dto.Histogram {
	d := &dto.Histogram{SampleCount: ptrTo(after.GetSampleCount() - before.GetSampleCount())}
	for i, b := range after.GetBucket() {
		c := b.GetCumulativeCount()
		if i < len(before.GetBucket()) {
			c -= before.GetBucket()[i].GetCumulativeCount()
		}
		d.Bucket = append(d.Bucket, &dto.Bucket{UpperBound: ptrTo(b.GetUpperBound()), CumulativeCount: ptrTo(c)})
	}
	return d
}

func ptrTo[T any](v T) *T { return &v }

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// procStatusBytes reads a "<key>: <n> kB" line of /proc/<pid>/status.
func procStatusBytes(status []byte, key string) (int64, error) {
	s := bufio.NewScanner(bytes.NewReader(status))
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), key+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc status", key)
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func sumCounter(f *dto.MetricFamily) float64 {
	sum := 0.0
	for _, m := range f.GetMetric() {
		sum += m.GetCounter().GetValue()
	}
	return sum
}

func gaugeValue(f *dto.MetricFamily, name string) float64 {
	for _, m := range f.GetMetric() {
		if labelValue(m, "name") == name || labelValue(m, "controller") == name {
			return m.GetGauge().GetValue()
		}
	}
	return math.NaN()
}

func histogramOf(f *dto.MetricFamily, controller string) *dto.Histogram {
	for _, m := range f.GetMetric() {
		if labelValue(m, "controller") == controller {
			return m.GetHistogram()
		}
	}
	return nil
}

// cumulativeCount is how many observations of h are at most bound, which must be one of its bucket bounds.
func cumulativeCount(h *dto.Histogram, bound float64) (int, error) {
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == bound {
			return int(b.GetCumulativeCount()), nil
		}
	}
	return 0, fmt.Errorf("%g s is no bucket bound of the reconcile time histogram", bound)
}

// histogramQuantile is Prometheus' histogram_quantile: linear interpolation inside the bucket that holds
// the quantile. It also returns that bucket's upper bound.
func histogramQuantile(h *dto.Histogram, q float64) (value, bucketBound float64) {
	total := float64(h.GetSampleCount())
	if total == 0 {
		return 0, 0
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for _, b := range h.GetBucket() {
		upper, count := b.GetUpperBound(), float64(b.GetCumulativeCount())
		if count >= rank {
			if math.IsInf(upper, 1) {
				return lower, upper
			}
			return lower + (upper-lower)*(rank-below)/(count-below), upper
		}
		lower, below = upper, count
	}
	return lower, math.Inf(1)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func printFootprint(w io.Writer, o footprintOptions, f footprint) {
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	_, _ = fmt.Fprintf(w, "\nComputeDomain controller footprint: %d domains over %d nodes (%d workload claims), %d namespaces\n\n", o.domains, o.nodes, o.domains*(o.nodes/o.domains), o.namespaces)
	_, _ = fmt.Fprintf(w, "peak RSS (VmHWM)         %.0f MiB   (goal ≤ 300 MiB)\n", mib(f.peakRSS))
	_, _ = fmt.Fprintf(w, "RSS when settled         %.0f MiB\n", mib(f.rss))
	_, _ = fmt.Fprintf(w, "reconciles               %d (%d errors)\n", f.reconciles, f.reconcileErrors)
	_, _ = fmt.Fprintf(w, "formation phase (domains and claims created):\n")
	_, _ = fmt.Fprintf(w, "reconcile p50            %.1f ms\n", float64(f.p50.Microseconds())/1e3)
	_, _ = fmt.Fprintf(w, "reconcile p99            %.1f ms (bucket ≤ %g s; goal ≤ 50 ms)\n", float64(f.p99.Microseconds())/1e3, f.p99Bucket)
	_, _ = fmt.Fprintf(w, "reconcile mean           %.1f ms\n", float64(f.mean.Microseconds())/1e3)
	_, _ = fmt.Fprintf(w, "reconciles over 50 ms    %d of %d (%.1f %%; the goal allows 1 %%)\n", f.over50ms, f.ofReconciles, 100*float64(f.over50ms)/float64(max(f.ofReconciles, 1)))
	_, _ = fmt.Fprintf(w, "objects written in       %.1f s\n", f.creating.Seconds())
	_, _ = fmt.Fprintf(w, "settled after            %.1f s\n", f.settled.Seconds())
	_, _ = fmt.Fprintf(w, "API requests             %s (client-side rate limit: the controller's --kube-api-qps and --kube-api-burst; flags: %s)\n", formatRequests(f.requests), strings.Join(o.controllerArgs, " "))
	_, _ = fmt.Fprintf(w, "API priority and fairness (the controller as service account %s):\n%s", controllerUser, f.apiServer.apf)
	_, _ = fmt.Fprintf(w, "API server latency of a new domain's calls, in the order a reconcile sends them (formation phase):\n%s", f.apiServer.calls)
	_, _ = fmt.Fprintf(w, "the controller's view of its calls (client-go, formation phase):\n%s", f.client)
	_, _ = fmt.Fprintf(w, "steady phase (every domain touched once, nothing to change):\n")
	_, _ = fmt.Fprintf(w, "  reconciles             %d\n", f.steadyReconciles)
	_, _ = fmt.Fprintf(w, "  reconcile p50          %.1f ms\n", float64(f.steadyP50.Microseconds())/1e3)
	_, _ = fmt.Fprintf(w, "  reconcile p99          %.1f ms\n", float64(f.steadyP99.Microseconds())/1e3)
	_, _ = fmt.Fprintf(w, "  settled after          %.1f s\n", f.steadySettled.Seconds())
}

func formatRequests(r map[string]int) string {
	methods := make([]string, 0, len(r))
	for m := range r {
		methods = append(methods, m)
	}
	slices.Sort(methods)
	parts := make([]string, 0, len(methods))
	for _, m := range methods {
		parts = append(parts, fmt.Sprintf("%s %d", m, r[m]))
	}
	return strings.Join(parts, ", ")
}
