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

// Package app is the ComputeDomain controller binary: flags, manager, metrics endpoint. Run holds no
// process-global state of its own (its own flag set, logger, metrics registry and controller-runtime
// options; controller-runtime's metrics registry is process-global and shared), so several instances can
// run in one process.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/cmd/internal/startup"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain"
	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
)

// options are the command-line flags.
type options struct {
	kubeconfig          string
	namespace           string
	driverName          string
	channelDeviceClass  string
	maxNodesPerClique   int
	statusWriteInterval time.Duration
	cliquePlacement     bool
	gpuDriverName       string
	qps                 float64
	burst               int
	workers             int
	metricsAddress      string
	healthProbeAddress  string
	pprofAddress        string
	leaderElect         bool
	leaderElectionID    string
	leaderElectionNS    string
	leaseDuration       time.Duration
	renewDeadline       time.Duration
	retryPeriod         time.Duration
	logConfig           *textlogger.Config
}

func parse(args []string) (*options, error) {
	o := &options{logConfig: textlogger.NewConfig()}
	fs := flag.NewFlagSet("compute-domain-controller", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty: the in-cluster config.")
	fs.StringVar(&o.namespace, "namespace", os.Getenv("POD_NAMESPACE"), "The operator namespace: where the long-lived IMEX daemons, their IMEXNodes and the IMEXCliques live (default $POD_NAMESPACE).")
	fs.StringVar(&o.driverName, "driver-name", computedomain.DefaultDriverName, "Name of the compute-domain DRA driver the claim templates' opaque configs address.")
	fs.StringVar(&o.channelDeviceClass, "channel-device-class", computedomain.DefaultChannelDeviceClass, "DeviceClass of the workload channel claims.")
	fs.DurationVar(&o.statusWriteInterval, "status-write-interval", 500*time.Millisecond, "Shortest time between two status writes of one ComputeDomain; what changes in between is written together (every node's plugin decodes every write). 0 writes every change at once.")
	fs.BoolVar(&o.cliquePlacement, "clique-placement-fallback", false, "Without the Workload API, pin the pods the webhook held (webhook --pod-groups) to one NVLink clique with enough free nodes and release them together; needs update on pods.")
	fs.StringVar(&o.gpuDriverName, "gpu-driver-name", v1beta1.GPUDriverName, "DRA driver of the GPUs whose allocations make a node busy for --clique-placement-fallback.")
	fs.IntVar(&o.maxNodesPerClique, "max-nodes-per-clique", v1beta1.NVL72CliqueSize, "Most nodes of one IMEX ensemble (one per clique); 18 on NVL72.")
	fs.IntVar(&o.workers, "workers", 4, "Concurrent reconciles.")
	fs.Float64Var(&o.qps, "kube-api-qps", 200, "Client-side rate limit of all the controller's API requests together, per second (a new domain costs 4 writes: 1,000 domains created within 30 s ask for about 130 a second). The API server's priority and fairness bounds the controller too (flow schema service-accounts, priority level workload-low).")
	fs.IntVar(&o.burst, "kube-api-burst", 400, "Burst of the controller's client-side rate limit.")
	fs.StringVar(&o.metricsAddress, "metrics-bind-address", ":8080", "Address of the Prometheus metrics endpoint; \"0\" disables it.")
	fs.StringVar(&o.healthProbeAddress, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz; \"0\" disables them.")
	fs.StringVar(&o.pprofAddress, "pprof-bind-address", "0", "Address of Go's /debug/pprof/ profiles (CPU, heap) for a performance investigation; \"0\" (the default) disables them. Bind it to localhost: profiles are not authenticated.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader so that one of several replicas reconciles.")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", "compute-domain-controller.resource.nvidia.com", "Name of the leader election Lease.")
	fs.StringVar(&o.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader election Lease (default: --namespace).")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "Leader election lease duration.")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "Leader election renew deadline.")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "Leader election retry period.")
	o.logConfig.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q: every setting is a flag", fs.Args())
	}
	if o.maxNodesPerClique < 1 {
		return nil, fmt.Errorf("--max-nodes-per-clique: %d, must be at least 1", o.maxNodesPerClique)
	}
	if o.workers < 1 {
		return nil, fmt.Errorf("--workers: %d, must be at least 1", o.workers)
	}
	if o.leaderElectionNS == "" {
		o.leaderElectionNS = o.namespace
	}
	return o, nil
}

// controllerConfig turns the flags into the reconciler's config, naming the flag that is unusable.
func (o *options) controllerConfig() (computedomain.Config, error) {
	cfg := computedomain.Config{
		OperatorNamespace:   o.namespace,
		DriverName:          o.driverName,
		ChannelDeviceClass:  o.channelDeviceClass,
		MaxNodesPerClique:   o.maxNodesPerClique,
		StatusWriteInterval: o.statusWriteInterval,
		CliquePlacement:     o.cliquePlacement,
		GPUDriverName:       o.gpuDriverName,
	}.WithDefaults()
	if cfg.OperatorNamespace == "" {
		return cfg, fmt.Errorf("--namespace: must be set (or $POD_NAMESPACE): the operator namespace")
	}
	return cfg, cfg.Validate()
}

// Run parses args and runs the controller until ctx ends.
func Run(ctx context.Context, args []string) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	restConfig, err := startup.RestConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	return run(ctx, restConfig, o)
}

// RunWithConfig is Run for callers that already hold a client config (the simulated cluster); a
// --kubeconfig flag in args is ignored.
func RunWithConfig(ctx context.Context, restConfig *rest.Config, args []string) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	return run(ctx, rest.CopyConfig(restConfig), o)
}

func run(ctx context.Context, restConfig *rest.Config, o *options) error {
	ctx = startup.WithLogger(ctx, o.logConfig, "compute-domain-controller", "")
	logger := klog.FromContext(ctx)
	if o.qps <= 0 || o.burst < 1 {
		return fmt.Errorf("--kube-api-qps %v and --kube-api-burst %d: must be positive", o.qps, o.burst)
	}
	limitRequests(restConfig, o.qps, o.burst)
	registerClientLatencies()

	cfg, err := o.controllerConfig()
	if err != nil {
		return err
	}

	scheme, err := kubescheme.New()
	if err != nil {
		return err
	}
	registry := prometheus.NewRegistry()
	mgr, err := computedomain.NewManager(ctx, restConfig, cfg, computedomain.ManagerOptions{
		Scheme:     scheme,
		Logger:     logger,
		Registerer: registry,
		Workers:    o.workers,
		Manager: ctrl.Options{
			HealthProbeBindAddress:        o.healthProbeAddress,
			PprofBindAddress:              o.pprofAddress,
			LeaderElection:                o.leaderElect,
			LeaderElectionID:              o.leaderElectionID,
			LeaderElectionNamespace:       o.leaderElectionNS,
			LeaderElectionReleaseOnCancel: true,
			LeaseDuration:                 &o.leaseDuration,
			RenewDeadline:                 &o.renewDeadline,
			RetryPeriod:                   &o.retryPeriod,
		},
	})
	if err != nil {
		return err
	}
	if o.metricsAddress != "0" && o.metricsAddress != "" {
		if err := mgr.Add(&metricsEndpoint{address: o.metricsAddress, gatherer: metricsGatherer(registry)}); err != nil {
			return err
		}
	}
	if o.healthProbeAddress != "0" && o.healthProbeAddress != "" {
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
			return err
		}
	}
	logger.Info("Starting", "namespace", cfg.OperatorNamespace, "driver", cfg.DriverName, "leaderElect", o.leaderElect)
	return mgr.Start(ctx)
}

// limitRequests gives every client made from cfg one rate limit of qps requests a second together. client-go
// gives each REST client a limiter of its own otherwise, and controller-runtime makes a client per kind, so
// --kube-api-qps bounded each kind's requests alone: in a burst of new domains the ComputeDomain writes
// waited for theirs (p50 32 ms a PATCH) while the claim templates' limiter stayed idle, and the controller's
// total was the limit times the kinds it writes. The leader election's lease renewals share the limit too:
// the requests waiting for it are bounded by the concurrent reconciles (--workers), so a renewal waits for a
// few of them at most, never for a burst.
func limitRequests(cfg *rest.Config, qps float64, burst int) {
	cfg.QPS, cfg.Burst = float32(qps), burst
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
}

// clientLatencyBuckets resolve the few milliseconds an API call takes on an idle control plane and the
// seconds of a throttled one (client-go's default starts at 5 ms and jumps from 25 to 100 ms).
var clientLatencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// registerClientLatencies turns on client-go's latency histograms, which controller-runtime leaves off: how
// long each API call took as the controller saw it (rest_client_request_duration_seconds, by verb) and how
// long it waited for the client-side rate limit first (rest_client_rate_limiter_duration_seconds), the
// figures that tell whether --kube-api-qps throttles the controller or the API server is slow.
func registerClientLatencies() {
	ctrlmetrics.RegisterRESTClientMetricsWithOptions(ctrlmetrics.RESTClientMetricsOptions{DurationBuckets: clientLatencyBuckets},
		ctrlmetrics.MetricRequestLatency, ctrlmetrics.MetricRateLimiterLatency)
}

// metricsGatherer gathers the controller's own metrics from registry and controller-runtime's (reconciles,
// work queue, API client, Go runtime and process) from controller-runtime's process-global registry, which
// is registered once per process however many controllers run in it.
func metricsGatherer(registry prometheus.Gatherer) prometheus.Gatherer {
	return prometheus.Gatherers{registry, ctrlmetrics.Registry}
}

// metricsEndpoint serves metrics over HTTP, on every replica (not only the leader).
type metricsEndpoint struct {
	address  string
	gatherer prometheus.Gatherer
}

func (m *metricsEndpoint) NeedLeaderElection() bool { return false }

func (m *metricsEndpoint) Start(ctx context.Context) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.gatherer, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", m.address)
	if err != nil {
		return fmt.Errorf("listen for metrics on %s: %w", m.address, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	klog.FromContext(ctx).Info("Serving metrics", "address", ln.Addr().String())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve metrics: %w", err)
	}
	return nil
}
