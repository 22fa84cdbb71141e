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

// Package draplugin is the plumbing shared by our kubelet plugins
// (gpu.nvidia.com and compute-domain.nvidia.com), one concern per file:
//
//   - flags.go, node_files.go: the command line every plugin has (node,
//     driver, directories, NVML backend, logger) and the files it keeps on
//     its node (CDI specs, checkpoint);
//   - draplugin.go, serve.go: starting the kubeletplugin helper with the
//     node's socket directories, and the metrics endpoint;
//   - publisher.go: publishing the pool once the helper runs;
//   - background_errors.go: the DRAPlugin.HandleError policy;
//   - stale_claims.go: unpreparing claims whose ResourceClaim is gone;
//   - crash_points.go: the crash hook of the plugins' crash tests;
//   - prepared_devices.go, opaque_config.go: prepare results and configs.
package draplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
)

// Default kubelet directories.
const (
	DefaultRegistrarDir = kubeletplugin.KubeletRegistryDir
	DefaultPluginsDir   = kubeletplugin.KubeletPluginsDir
)

// Options locate a plugin instance on its node.
type Options struct {
	DriverName string
	NodeName   string
	KubeClient kubernetes.Interface
	// RegistrarDir holds <driver>-reg.sock, watched by the kubelet.
	RegistrarDir string
	// PluginsDir holds one directory per driver with dra.sock and the
	// plugin's state.
	PluginsDir string
	// Concurrent: the plugin is safe for concurrent prepare and unprepare
	// calls, so the helper does not serialize them
	// (kubeletplugin.Serialize(false)); unset, the helper runs one call of
	// the plugin at a time.
	Concurrent bool
	// Registration, when set, records what the kubelet says of the
	// plugin's registration (Serve sets it for the readiness endpoint).
	Registration *Registration
}

// PluginDataDir is <plugins dir>/<driver>: the DRA socket and the checkpoint.
func (o Options) PluginDataDir() string { return filepath.Join(o.PluginsDir, o.DriverName) }

// Start registers the plugin with the kubelet and serves its gRPC API. The
// helper serializes gRPC calls.
func Start(ctx context.Context, plugin kubeletplugin.DRAPlugin, o Options) (*kubeletplugin.Helper, error) {
	if o.DriverName == "" || o.NodeName == "" || o.KubeClient == nil {
		return nil, errors.New("start kubelet plugin: driver name, node name and client are required")
	}
	// The kubelet creates these on a real node; a simulated node or a fresh
	// test directory may lack them.
	for _, dir := range []string{o.RegistrarDir, o.PluginDataDir()} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("start kubelet plugin %s: %w", o.DriverName, err)
		}
	}
	opts := []kubeletplugin.Option{
		kubeletplugin.DriverName(o.DriverName),
		kubeletplugin.NodeName(o.NodeName),
		kubeletplugin.KubeClient(o.KubeClient),
		kubeletplugin.RegistrarDirectoryPath(o.RegistrarDir),
		kubeletplugin.PluginDataDirectoryPath(o.PluginDataDir()),
		kubeletplugin.Serialize(!o.Concurrent),
	}
	if o.Registration != nil {
		opts = append(opts, kubeletplugin.GRPCInterceptor(o.Registration.interceptor))
	}
	helper, err := kubeletplugin.Start(ctx, plugin, opts...)
	if err != nil {
		return nil, fmt.Errorf("start kubelet plugin %s: %w", o.DriverName, err)
	}
	return helper, nil
}

// ClaimClient reads ResourceClaims through a clientset.
type ClaimClient struct {
	Client kubernetes.Interface
}

// GetResourceClaim gets one claim.
func (c ClaimClient) GetResourceClaim(ctx context.Context, namespace, name string) (*resourceapi.ResourceClaim, error) {
	return c.Client.ResourceV1().ResourceClaims(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Route is one more read-only endpoint on the metrics listener (the GPU
// plugin's usage ledger).
type Route struct {
	Path    string
	Handler http.Handler
}

// ServeMetrics serves reg on addr at /metrics until ctx ends. It returns once
// the listener is bound, so a bad address fails the caller's start-up.
func ServeMetrics(ctx context.Context, addr string, reg *prometheus.Registry, routes ...Route) (net.Addr, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics address %q: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	for _, r := range routes {
		mux.Handle(r.Path, r.Handler)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "Metrics server stopped")
		}
	}()
	return lis.Addr(), nil
}
