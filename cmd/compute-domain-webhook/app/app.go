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

// Package app is the compute-domain-webhook binary: an HTTPS server with the webhook's handlers and /healthz.
// Run holds no process-global state (its own flag set, logger and server).
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/cmd/internal/startup"
	"github.com/computedomain-operator/computedomain-operator/internal/credentialwatch"
	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
	"github.com/computedomain-operator/computedomain-operator/internal/workloadapi"
	"github.com/computedomain-operator/computedomain-operator/webhook"
)

// options are the command-line flags.
type options struct {
	host    string
	port    int
	certDir string
	drivers webhook.Drivers
	// podGroups serves PodGroupPath, which reads ComputeDomains through kubeconfig (empty: in-cluster).
	podGroups  bool
	kubeconfig string
	// maxNodesPerClique is the slice plan's clique size: the controller's --max-nodes-per-clique.
	maxNodesPerClique int
	// credentialGiveUp: with podGroups, exit once the API server has refused the process's credentials this
	// long (credentialwatch); 0: never.
	credentialGiveUp time.Duration
	logConfig        *textlogger.Config
}

func parse(args []string) (*options, error) {
	o := &options{logConfig: textlogger.NewConfig()}
	fs := pflag.NewFlagSet("compute-domain-webhook", pflag.ContinueOnError)
	fs.StringVar(&o.host, "host", "", "Address to listen on; empty: every address.")
	fs.IntVar(&o.port, "port", 9443, "HTTPS port of the webhook.")
	fs.StringVar(&o.certDir, "cert-dir", "/etc/compute-domain-webhook/certs", "Directory holding the serving certificate tls.crt and its key tls.key (reloaded when they change).")
	fs.StringVar(&o.drivers.GPU, "gpu-driver-name", apiv1beta1.GPUDriverName, "Driver whose opaque configs are GpuConfig and MigDeviceConfig.")
	fs.StringVar(&o.drivers.ComputeDomain, "compute-domain-driver-name", apiv1beta1.ComputeDomainDriverName, "Driver whose opaque configs are ComputeDomainChannelConfig and ComputeDomainDaemonConfig.")
	fs.BoolVar(&o.podGroups, "pod-groups", false, "Also serve "+webhook.PodGroupPath+": pods that use a ComputeDomain's workload claim template join the domain's PodGroup (reads ComputeDomains from the API).")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Kubeconfig for --pod-groups; empty: the in-cluster configuration.")
	fs.IntVar(&o.maxNodesPerClique, "max-nodes-per-clique", apiv1beta1.NVL72CliqueSize, "Most nodes of one IMEX ensemble (one per clique), as the controller's flag of that name: the clique size of a domain's slice plan.")
	fs.DurationVar(&o.credentialGiveUp, "credential-give-up", credentialwatch.DefaultGiveUp, "With --pod-groups: exit once the API server has refused this process's credentials for this long (its pod is gone, so a server kept running would answer every pod with that refusal); 0: never.")
	goflags := flag.NewFlagSet("compute-domain-webhook", flag.ContinueOnError)
	o.logConfig.AddFlags(goflags)
	fs.AddGoFlagSet(goflags)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q: every setting is a flag", fs.Args())
	}
	if o.port < 1 || o.port > 65535 {
		return nil, fmt.Errorf("--port %d: must be 1..65535", o.port)
	}
	if o.credentialGiveUp < 0 {
		return nil, fmt.Errorf("--credential-give-up %s: must not be negative (0: never)", o.credentialGiveUp)
	}
	if o.maxNodesPerClique < 1 {
		return nil, fmt.Errorf("--max-nodes-per-clique: %d, must be at least 1", o.maxNodesPerClique)
	}
	if !filepath.IsAbs(o.certDir) {
		return nil, fmt.Errorf("--cert-dir %q: must be an absolute path", o.certDir)
	}
	for flagName, name := range map[string]string{"--gpu-driver-name": o.drivers.GPU, "--compute-domain-driver-name": o.drivers.ComputeDomain} {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return nil, fmt.Errorf("%s %q: must be a DNS subdomain: %v", flagName, name, errs)
		}
	}
	if o.drivers.GPU == o.drivers.ComputeDomain {
		return nil, fmt.Errorf("--gpu-driver-name and --compute-domain-driver-name: must differ (both %q)", o.drivers.GPU)
	}
	return o, nil
}

// Run parses args and serves the webhook until ctx ends; with --pod-groups its client configuration is
// --kubeconfig's (empty: in-cluster).
func Run(ctx context.Context, args []string) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	var restConfig *rest.Config
	if o.podGroups {
		if restConfig, err = clientcmd.BuildConfigFromFlags("", o.kubeconfig); err != nil {
			return fmt.Errorf("--pod-groups: client configuration: %w", err)
		}
	}
	return run(ctx, o, restConfig)
}

// RunWithConfig is Run with the client configuration given (--kubeconfig is ignored): how the simulated
// cluster runs the binary in-process from its pod.
func RunWithConfig(ctx context.Context, restConfig *rest.Config, args []string) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	return run(ctx, o, restConfig)
}

func run(ctx context.Context, o *options, restConfig *rest.Config) error {
	ctx = startup.WithLogger(ctx, o.logConfig, "compute-domain-webhook", "")
	scheme, err := kubescheme.New()
	if err != nil {
		return err
	}
	srv := ctrlwebhook.NewServer(ctrlwebhook.Options{Host: o.host, Port: o.port, CertDir: o.certDir})
	for path, h := range webhook.Handlers(scheme, o.drivers) {
		srv.Register(path, h)
	}
	placement := webhook.Placement{MaxNodesPerClique: o.maxNodesPerClique}
	if o.podGroups {
		domains, err := domainCache(ctx, restConfig, scheme)
		if err != nil {
			return err
		}
		// Looked up once, as the controller does: the two agree on whether pods join PodGroups or are held for
		// the controller's clique placement as long as the cluster's API does not change under them.
		dc, err := discovery.NewDiscoveryClientForConfig(restConfig)
		if err != nil {
			return fmt.Errorf("--pod-groups: discovery client: %w", err)
		}
		if placement.WorkloadAPI, err = workloadapi.Served(dc); err != nil {
			return fmt.Errorf("--pod-groups: %w", err)
		}
		if placement.WorkloadAPI {
			if placement.CompositePodGroups, err = workloadapi.CompositeServed(dc); err != nil {
				return fmt.Errorf("--pod-groups: %w", err)
			}
		}
		live, err := client.New(restConfig, client.Options{Scheme: scheme})
		if err != nil {
			return fmt.Errorf("--pod-groups: client: %w", err)
		}
		srv.Register(webhook.PodGroupPath, webhook.PodGroupHandler(scheme, domains, live, placement))
	}
	srv.WebhookMux().HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if o.podGroups && o.credentialGiveUp > 0 {
		// A webhook that outlives its pod (its node's kubelet gone, the pod force-deleted) would answer every pod
		// with the API server's refusal of its token for as long as a connection to it stays open: it exits.
		cs, err := kubernetes.NewForConfig(restConfig)
		if err != nil {
			return fmt.Errorf("--pod-groups: client: %w", err)
		}
		go func() {
			if err := credentialwatch.Watch(ctx, cs.AuthenticationV1().SelfSubjectReviews(), credentialwatch.Options{
				GiveUp: o.credentialGiveUp, Interval: min(credentialwatch.DefaultInterval, o.credentialGiveUp/4),
			}); err != nil {
				stop(err)
			}
		}()
	}
	klog.FromContext(ctx).Info("compute-domain webhook starting", "port", o.port, "gpuDriver", o.drivers.GPU, "computeDomainDriver", o.drivers.ComputeDomain, "podGroups", o.podGroups,
		"workloadAPI", placement.WorkloadAPI, "compositePodGroups", placement.CompositePodGroups, "maxNodesPerClique", placement.MaxNodesPerClique)
	if err := srv.Start(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("webhook server: %w", err)
	}
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// domainCache is a started and synced cache of ComputeDomains, indexed by their workload claim template.
func domainCache(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) (client.Reader, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, ByObject: map[client.Object]cache.ByObject{&apiv1beta1.ComputeDomain{}: {}}})
	if err != nil {
		return nil, fmt.Errorf("--pod-groups: cache: %w", err)
	}
	if err := c.IndexField(ctx, &apiv1beta1.ComputeDomain{}, webhook.ClaimTemplateField, webhook.ClaimTemplateOf); err != nil {
		return nil, fmt.Errorf("--pod-groups: index ComputeDomains: %w", err)
	}
	go func() {
		if err := c.Start(ctx); err != nil {
			klog.FromContext(ctx).Error(err, "ComputeDomain cache stopped")
		}
	}()
	if !c.WaitForCacheSync(ctx) {
		return nil, errors.New("--pod-groups: the ComputeDomain cache did not sync")
	}
	return c, nil
}
