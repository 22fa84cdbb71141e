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

// Package app is the metering component: Run serves, Run with "report" as the
// first argument asks a running component for a report.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/clock"

	"github.com/computedomain-operator/computedomain-operator/cmd/internal/startup"
	"github.com/computedomain-operator/computedomain-operator/metering"
)

// DefaultPluginSelector selects the chart's kubelet-plugin pods.
const DefaultPluginSelector = "app.kubernetes.io/name=compute-domain-kubelet-plugin"

type options struct {
	kubeconfig     string
	namespace      string
	pluginSelector string
	pluginPort     int
	teamLabel      string
	pullInterval   time.Duration
	listenAddress  string
	units          metering.BillingUnits
	claimRetention time.Duration
	logConfig      *textlogger.Config
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func parse(args []string, lookup func(string) (string, bool)) (*options, error) {
	o := &options{logConfig: textlogger.NewConfig(), units: metering.BillingUnits{Classes: map[string]metering.Unit{}}}
	ns, _ := lookup("POD_NAMESPACE")
	fs := flag.NewFlagSet("compute-domain-metering", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty: the in-cluster config.")
	fs.StringVar(&o.namespace, "namespace", ns, "Namespace of the kubelet-plugin pods (default $POD_NAMESPACE).")
	fs.StringVar(&o.pluginSelector, "plugin-selector", DefaultPluginSelector, "Label selector of the kubelet-plugin pods whose GPU plugin serves a usage ledger.")
	fs.IntVar(&o.pluginPort, "plugin-port", 9090, "Port of the GPU plugin's metrics listener, which serves /usage.")
	fs.StringVar(&o.teamLabel, "team-label", "team", "Namespace label naming the namespace's team.")
	fs.DurationVar(&o.pullInterval, "pull-interval", 30*time.Second, "How often every node's ledger is pulled: open intervals in metrics and reports are at most this old.")
	fs.StringVar(&o.listenAddress, "listen-address", ":8080", "Address of /metrics and /report.")
	fs.DurationVar(&o.claimRetention, "claim-retention", 744*time.Hour, "How long a deleted ResourceClaim is remembered to check the usage intervals of it that are pulled late (the GPU plugins' --usage-retention).")
	defaultUnit := fs.String("default-billing-unit", string(metering.DeviceSeconds), "Billing unit of classes without --billing-unit: device-seconds, gpu-memory-GiB-seconds or mig-slice-seconds.")
	var perClass stringList
	fs.Var(&perClass, "billing-unit", "<device class>=<unit>: the billing unit of one DeviceClass (repeatable).")
	o.logConfig.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q: the only subcommand is report", fs.Args())
	}
	u, err := metering.ParseUnit(*defaultUnit)
	if err != nil {
		return nil, fmt.Errorf("--default-billing-unit: %w", err)
	}
	o.units.Default = u
	for _, v := range perClass {
		class, unit, err := metering.ParseBillingUnit(v)
		if err != nil {
			return nil, err
		}
		o.units.Classes[class] = unit
	}
	switch {
	case o.namespace == "":
		return nil, errors.New("--namespace: must be set (or $POD_NAMESPACE): the namespace of the kubelet-plugin pods")
	case o.pluginPort < 1 || o.pluginPort > 65535:
		return nil, fmt.Errorf("--plugin-port %d: must be from 1 to 65535", o.pluginPort)
	case o.pullInterval < 100*time.Millisecond:
		return nil, fmt.Errorf("--pull-interval %s: must be at least 100ms", o.pullInterval)
	case o.claimRetention < time.Hour:
		return nil, fmt.Errorf("--claim-retention %s: must be at least 1h", o.claimRetention)
	case o.teamLabel == "":
		return nil, errors.New("--team-label: must be set: the namespace label naming a team")
	}
	return o, nil
}

// Run runs the component until ctx ends, or with "report" first prints a
// report of a running one to stdout.
func Run(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "report" {
		return Report(ctx, args[1:], os.Stdout)
	}
	o, err := parse(args, os.LookupEnv)
	if err != nil {
		return err
	}
	cfg, err := startup.RestConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	return serve(ctx, cfg, o)
}

// RunWithConfig is Run for callers that hold a client configuration and the
// container's environment (the simulated cluster).
func RunWithConfig(ctx context.Context, cfg *rest.Config, args []string, env map[string]string) error {
	if len(args) > 0 && args[0] == "report" {
		return Report(ctx, args[1:], os.Stdout)
	}
	o, err := parse(args, startup.EnvLookup(env))
	if err != nil {
		return err
	}
	return serve(ctx, rest.CopyConfig(cfg), o)
}

func serve(ctx context.Context, cfg *rest.Config, o *options) error {
	ctx = startup.WithLogger(ctx, o.logConfig, "compute-domain-metering", "")
	logger := klog.FromContext(ctx)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// Every interval's claim is checked against what the API server says,
	// including claims deleted before their interval is pulled: watch them
	// before the first pull.
	claims := metering.NewAPIClaims(client, clock.RealClock{}, o.claimRetention)
	if err := claims.Run(ctx); err != nil {
		return err
	}
	events, stopEvents := metering.NewAPIEvents(ctx, client)
	defer stopEvents()
	meter := metering.NewMeter(
		metering.PluginPods{Client: client, Namespace: o.namespace, Selector: o.pluginSelector, Port: o.pluginPort},
		metering.HTTPFetcher{},
		metering.APIJoiner{Client: client, TeamLabel: o.teamLabel},
		metering.WithClaims(claims), metering.WithEvents(events),
	)
	reg := prometheus.NewRegistry()
	reg.MustRegister(metering.Collector{Meter: meter, Units: o.units})
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.Handle(metering.ReportPath, metering.ReportHandler(meter, o.units))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	lis, err := net.Listen("tcp", o.listenAddress)
	if err != nil {
		return fmt.Errorf("--listen-address %q: %w", o.listenAddress, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "Metering server stopped")
		}
	}()
	defer func() {
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	logger.Info("Metering started", "address", lis.Addr().String(), "namespace", o.namespace, "pullInterval", o.pullInterval, "teamLabel", o.teamLabel)
	ticker := time.NewTicker(o.pullInterval)
	defer ticker.Stop()
	for {
		if err := meter.Pull(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Pulling usage ledgers failed; retrying")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// Report asks a running component (--server) for the report of [--from,
// --to) and writes it to out.
func Report(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("compute-domain-metering report", flag.ContinueOnError)
	server := fs.String("server", "", "URL of the metering component (http://compute-domain-metering.<namespace>:8080).")
	from := fs.String("from", "", "Start of the period, RFC 3339 (2026-11-01T00:00:00Z), inclusive.")
	to := fs.String("to", "", "End of the period, RFC 3339, exclusive.")
	format := fs.String("format", "csv", "csv or json.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("report: unexpected arguments %q: every setting is a flag", fs.Args())
	}
	if _, _, err := metering.ParsePeriod(*from, *to); err != nil {
		return fmt.Errorf("report: --%w", err)
	}
	if _, err := metering.ParseFormat(*format); err != nil {
		return fmt.Errorf("report: --%w", err)
	}
	base, err := url.Parse(*server)
	if err != nil || base.Host == "" || (base.Scheme != "http" && base.Scheme != "https") {
		return fmt.Errorf("report: --server %q: must be an http(s) URL of the metering component", *server)
	}
	q := url.Values{"from": {*from}, "to": {*to}, "format": {*format}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base.String(), "/")+metering.ReportPath+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("report: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	_, err = io.Copy(out, resp.Body)
	return err
}
