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

package simcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"runtime"
	"strings"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// versionProxy is a loopback HTTP proxy to the cluster's API server that
// answers GET /version with the Kubernetes release the simulated cluster is
// built from. The in-process API server carries no release stamp and reports
// v0.0.0-master+$Format:%H$, which Kueue v0.17.0 cannot parse and exits on
// ("Unable to setup server version fetcher"); every other request goes
// through unchanged with the admin credentials of cfg.
type versionProxy struct {
	server   *http.Server
	listener net.Listener
}

func startVersionProxy(cfg *rest.Config) (*versionProxy, error) {
	release, err := KubernetesVersion()
	if err != nil {
		return nil, err
	}
	v, err := semver.NewVersion(release)
	if err != nil {
		return nil, fmt.Errorf("kubernetes version %q: %w", release, err)
	}
	info := version.Info{
		Major: fmt.Sprint(v.Major()), Minor: fmt.Sprint(v.Minor()), GitVersion: release,
		GoVersion: runtime.Version(), Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("API server address %q: %w", cfg.Host, err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport: transport,
		// Watches stream.
		FlushInterval: -1,
		// Kueue's watches end with a canceled request when it stops: not an error worth a line after a demo's
		// last one.
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if !errors.Is(err, context.Canceled) {
				klog.FromContext(r.Context()).Error(err, "Proxying a Kueue request to the API server failed", "path", r.URL.Path)
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/version", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || strings.TrimSuffix(r.URL.Path, "/") != "/version" {
			proxy.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(info)
	})
	mux.Handle("/", proxy)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &versionProxy{server: &http.Server{Handler: mux}, listener: l}
	go func() { _ = p.server.Serve(l) }()
	return p, nil
}

// Config is a client configuration for the proxy (plain HTTP on loopback, no credentials: the proxy adds them).
func (p *versionProxy) Config() *rest.Config {
	return &rest.Config{Host: "http://" + p.listener.Addr().String(), QPS: 200, Burst: 400}
}

func (p *versionProxy) Close() { _ = p.server.Close() }
