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
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/computedomain-operator/computedomain-operator/internal/testing/envtest"
)

// controllerUser is the identity the controller runs as in the benchmark: the chart's service account, so
// that the API server's priority and fairness classifies its requests as it would in a cluster (the
// envtest admin is in system:masters, which APF exempts from every limit).
const controllerUser = "system:serviceaccount:" + operatorNamespace + ":compute-domain-controller"

// controllerIdentity writes a kubeconfig for controllerUser, with the groups the API server gives a
// service account's token, bound to cluster-admin: the benchmark measures load, not RBAC (the chart's
// roles are tested in charts/).
func controllerIdentity(ctx context.Context, env *envtest.Env, c client.Client, kubeconfig string) error {
	user, err := env.Environment.AddUser(crenvtest.User{
		Name:   controllerUser,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNamespace, "system:authenticated"},
	}, nil)
	if err != nil {
		return fmt.Errorf("add the controller's user: %w", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-compute-domain-controller"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: controllerUser}},
	}
	if err := c.Create(ctx, binding); err != nil {
		return fmt.Errorf("bind the controller's user: %w", err)
	}
	raw, err := user.KubeConfig()
	if err != nil {
		return err
	}
	return os.WriteFile(kubeconfig, raw, 0o600)
}

// apfFlow is what priority and fairness did with one flow schema's requests.
type apfFlow struct {
	flowSchema, priorityLevel string
	dispatched, rejected      float64
	waitP99                   float64 // seconds in the queue, interpolated in the histogram's buckets
	nominalSeats              float64 // the priority level's nominal concurrency limit
}

// apfFigures are the flows of every non-exempt flow schema that dispatched requests.
type apfFigures []apfFlow

func (a apfFigures) String() string {
	if len(a) == 0 {
		return "  no request went through a non-exempt flow schema\n"
	}
	var b strings.Builder
	for _, f := range a {
		fmt.Fprintf(&b, "  flow schema %s -> priority level %s (nominal %g seats): %g requests dispatched, %g rejected (HTTP 429), queue wait p99 %.1f ms\n",
			f.flowSchema, f.priorityLevel, f.nominalSeats, f.dispatched, f.rejected, f.waitP99*1e3)
	}
	return b.String()
}

// apiServerFigures are what the API server's metrics say about the controller's requests.
type apiServerFigures struct {
	apf   apfFigures
	calls callLatencies
}

// readAPIServer reads the API server's flow control and request latency metrics with the admin's config.
func readAPIServer(ctx context.Context, admin *rest.Config) (apiServerFigures, error) {
	kube, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return apiServerFigures{}, err
	}
	families, err := apiServerMetrics(ctx, kube.CoreV1().RESTClient())
	if err != nil {
		return apiServerFigures{}, err
	}
	return apiServerFigures{apf: apfFromMetrics(families), calls: controllerCallLatencies(families)}, nil
}

// apiServerMetrics reads and parses the API server's metrics through an admin's REST client.
func apiServerMetrics(ctx context.Context, admin rest.Interface) (map[string]*dto.MetricFamily, error) {
	raw, err := admin.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("API server metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("API server metrics: %w", err)
	}
	return families, nil
}

// controllerCall is a kind of API request a new domain's reconcile sends. The benchmark's writer sends none
// of them before the latencies are read (it creates domains and claims, and patches domains only in the
// steady phase after); the API server counts every client's requests, so a row may hold other clients' too
// (the GETs of templates did: 3,693 against the controller's own 1,013 in the run of docs/bench).
type controllerCall struct{ verb, resource, subresource string }

// controllerCalls are the requests a new domain's reconciles send: the finalizer and the workload claim
// template together, then the status; the GET of templates is a later pass's live read (and other clients'),
// which a new domain's first pass sent before creating its template until December 7.
var controllerCalls = []controllerCall{
	{"PATCH", "computedomains", ""},
	{"GET", "resourceclaimtemplates", ""},
	{"POST", "resourceclaimtemplates", ""},
	{"PATCH", "computedomains", "status"},
}

// callLatency is the API server's own latency of one controllerCall (apiserver_request_duration_seconds:
// from the request's arrival to its response, queueing in priority and fairness included).
type callLatency struct {
	call     controllerCall
	count    uint64
	p50, p99 float64 // seconds, interpolated in the histogram's buckets
}

type callLatencies []callLatency

func (c callLatencies) String() string {
	var b strings.Builder
	for _, l := range c {
		name := l.call.verb + " " + l.call.resource
		if l.call.subresource != "" {
			name += "/" + l.call.subresource
		}
		fmt.Fprintf(&b, "  %-35s %5d requests, p50 %.1f ms, p99 %.1f ms\n", name, l.count, l.p50*1e3, l.p99*1e3)
	}
	return b.String()
}

// controllerCallLatencies sums apiserver_request_duration_seconds over every series of each controllerCall.
func controllerCallLatencies(families map[string]*dto.MetricFamily) callLatencies {
	var out callLatencies
	for _, call := range controllerCalls {
		var sum *dto.Histogram
		for _, m := range families["apiserver_request_duration_seconds"].GetMetric() {
			if labelValue(m, "verb") == call.verb && labelValue(m, "resource") == call.resource &&
				labelValue(m, "subresource") == call.subresource {
				sum = histogramSum(sum, m.GetHistogram())
			}
		}
		if sum == nil {
			continue
		}
		l := callLatency{call: call, count: sum.GetSampleCount()}
		l.p50, _ = histogramQuantile(sum, 0.50)
		l.p99, _ = histogramQuantile(sum, 0.99)
		out = append(out, l)
	}
	return out
}

// histogramSum adds h to sum (nil: the empty histogram); histograms of one metric share their buckets.
func histogramSum(sum, h *dto.Histogram) *dto.Histogram {
	if sum == nil {
		return h
	}
	out := &dto.Histogram{SampleCount: ptrTo(sum.GetSampleCount() + h.GetSampleCount())}
	for i, b := range sum.GetBucket() {
		out.Bucket = append(out.Bucket, &dto.Bucket{UpperBound: ptrTo(b.GetUpperBound()),
			CumulativeCount: ptrTo(b.GetCumulativeCount() + h.GetBucket()[i].GetCumulativeCount())})
	}
	return out
}

// apfFromMetrics groups the flow control metrics by flow schema, leaving out the exempt one.
func apfFromMetrics(families map[string]*dto.MetricFamily) apfFigures {
	byFlow := map[string]*apfFlow{}
	flow := func(m *dto.Metric) *apfFlow {
		fs, pl := labelValue(m, "flow_schema"), labelValue(m, "priority_level")
		if fs == "" || fs == "exempt" {
			return nil
		}
		if byFlow[fs] == nil {
			byFlow[fs] = &apfFlow{flowSchema: fs, priorityLevel: pl}
		}
		return byFlow[fs]
	}
	for _, m := range families["apiserver_flowcontrol_dispatched_requests_total"].GetMetric() {
		if f := flow(m); f != nil {
			f.dispatched += m.GetCounter().GetValue()
		}
	}
	for _, m := range families["apiserver_flowcontrol_rejected_requests_total"].GetMetric() {
		if f := flow(m); f != nil {
			f.rejected += m.GetCounter().GetValue()
		}
	}
	for _, m := range families["apiserver_flowcontrol_request_wait_duration_seconds"].GetMetric() {
		if f := flow(m); f != nil && labelValue(m, "execute") == "true" {
			f.waitP99, _ = histogramQuantile(m.GetHistogram(), 0.99)
		}
	}
	seats := map[string]float64{}
	for _, m := range families["apiserver_flowcontrol_nominal_limit_seats"].GetMetric() {
		seats[labelValue(m, "priority_level")] = m.GetGauge().GetValue()
	}
	var out apfFigures
	for _, f := range byFlow {
		if f.dispatched > 0 || f.rejected > 0 {
			f.nominalSeats = seats[f.priorityLevel]
			out = append(out, *f)
		}
	}
	slices.SortFunc(out, func(a, b apfFlow) int { return strings.Compare(a.flowSchema, b.flowSchema) })
	return out
}

// cpuProfileSeconds is how much of the formation phase the controller's CPU profile covers: its first
// minute, the burst of domain creations.
const cpuProfileSeconds = 60

// startCPUProfile starts a CPU profile of the controller's next cpuProfileSeconds; the returned function
// waits for it and writes it to path.
func (p *controllerProcess) startCPUProfile(ctx context.Context, path string) (func() error, error) {
	if p.pprof == "" {
		return nil, fmt.Errorf("the controller serves no profiles")
	}
	// The manager serves profiles once it runs: wait for the endpoint.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		conn, err := net.Dial("tcp", p.pprof)
		if err != nil {
			return false, nil
		}
		_ = conn.Close()
		return true, nil
	}); err != nil {
		return nil, fmt.Errorf("the controller's profiles at %s: %w", p.pprof, err)
	}
	done := make(chan error, 1)
	go func() { done <- p.saveProfile(ctx, fmt.Sprintf("profile?seconds=%d", cpuProfileSeconds), path) }()
	return func() error { return <-done }, nil
}

// saveProfile writes the controller's /debug/pprof/<name> to path.
func (p *controllerProcess) saveProfile(ctx context.Context, name, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.pprof+"/debug/pprof/"+name, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("controller profile %s: %w", name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("controller profile %s: HTTP %d", name, resp.StatusCode)
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// clientLatencies are the controller's own view of its API calls, by verb, from client-go's histograms: how
// long a call took from the request's start (rest_client_request_duration_seconds: the network, the API
// server, the response's reading) and how long it waited for the client-side rate limit before that
// (rest_client_rate_limiter_duration_seconds).
type clientLatencies struct {
	verbs []clientVerb
}

type clientVerb struct {
	verb                   string
	count                  uint64
	p50, p99               float64 // seconds
	limiterP50, limiterP99 float64
	limiterCount           uint64
}

// clientLatenciesFrom sums each histogram's series by verb.
func clientLatenciesFrom(families map[string]*dto.MetricFamily) clientLatencies {
	byVerb := func(name string) map[string]*dto.Histogram {
		out := map[string]*dto.Histogram{}
		for _, m := range families[name].GetMetric() {
			v := labelValue(m, "verb")
			out[v] = histogramSum(out[v], m.GetHistogram())
		}
		return out
	}
	calls, limiter := byVerb("rest_client_request_duration_seconds"), byVerb("rest_client_rate_limiter_duration_seconds")
	verbs := slices.Sorted(maps.Keys(calls))
	var out clientLatencies
	for _, v := range verbs {
		c := clientVerb{verb: v, count: calls[v].GetSampleCount()}
		c.p50, _ = histogramQuantile(calls[v], 0.50)
		c.p99, _ = histogramQuantile(calls[v], 0.99)
		if l := limiter[v]; l != nil {
			c.limiterCount = l.GetSampleCount()
			c.limiterP50, _ = histogramQuantile(l, 0.50)
			c.limiterP99, _ = histogramQuantile(l, 0.99)
		}
		out.verbs = append(out.verbs, c)
	}
	return out
}

func (c clientLatencies) String() string {
	if len(c.verbs) == 0 {
		return "  (no client-go latency histograms: a controller older than December 7)\n"
	}
	var b strings.Builder
	for _, v := range c.verbs {
		fmt.Fprintf(&b, "  %-6s %5d requests, call p50 %.1f ms, p99 %.1f ms; rate limit wait p50 %.1f ms, p99 %.1f ms\n",
			v.verb, v.count, v.p50*1e3, v.p99*1e3, v.limiterP50*1e3, v.limiterP99*1e3)
	}
	return b.String()
}
