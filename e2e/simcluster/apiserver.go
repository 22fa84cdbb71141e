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
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"

	"k8s.io/client-go/rest"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/nodeagent"
)

// apiServer is kube-apiserver running in this process.
type apiServer struct {
	tb     *componentTB
	server kubeapiservertesting.TestServer
	Config *rest.Config
	// podAccess is how pods reach it (the kubernetes Service's address, the proxy, and its CA).
	podAccess nodeagent.APIServer
	proxy     *apiProxy
	tearDown  func()
}

// ResourceBetaVersions are the older resource.k8s.io versions a 1.37 apiserver can still serve.
var ResourceBetaVersions = []string{"resource.k8s.io/v1beta1", "resource.k8s.io/v1beta2"}

// apiServerFlags are the kube-apiserver flags of the simulated cluster.
func apiServerFlags(gates map[string]bool, resourceBetas bool) []string {
	flags := []string{
		"--endpoint-reconciler-type=none",
		// No ServiceAccount controller/token issuing in the simulation.
		"--disable-admission-plugins=ServiceAccount",
		// As every cluster that runs a kubelet plugin (kubeadm and kind set it):
		// the chart's plugin containers are privileged.
		"--allow-privileged=true",
	}
	if len(gates) > 0 {
		flags = append(flags, "--feature-gates="+formatGates(gates))
	}
	var runtimeConfig []string
	if gates["GenericWorkload"] {
		runtimeConfig = append(runtimeConfig, "scheduling.k8s.io/v1beta1=true")
	}
	if gates["CompositePodGroup"] {
		runtimeConfig = append(runtimeConfig, "scheduling.k8s.io/v1alpha3=true")
	}
	if resourceBetas {
		for _, v := range ResourceBetaVersions {
			runtimeConfig = append(runtimeConfig, v+"=true")
		}
	}
	if len(runtimeConfig) > 0 {
		flags = append(flags, "--runtime-config="+strings.Join(runtimeConfig, ","))
	}
	return flags
}

func formatGates(gates map[string]bool) string {
	names := make([]string, 0, len(gates))
	for name := range gates {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s=%t", name, gates[name]))
	}
	return strings.Join(parts, ",")
}

// startAPIServer starts kube-apiserver on a free localhost port against the
// given etcd. It also sets the process-global feature gates, which the
// scheduler and the controller manager read when they are created.
func startAPIServer(tb *componentTB, etcd *embeddedEtcd, gates map[string]bool, resourceBetas bool, extraFlags ...string) (*apiServer, error) {
	if err := stampKubernetesVersion(); err != nil {
		return nil, err
	}
	opts := kubeapiservertesting.NewDefaultTestServerOptions()
	opts.DisableInvariantChecks = true
	var server kubeapiservertesting.TestServer
	err := runGuarded(tb, func() error {
		var err error
		server, err = kubeapiservertesting.StartTestServer(tb, opts, append(apiServerFlags(gates, resourceBetas), extraFlags...), etcd.Storage)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("start kube-apiserver: %w", err)
	}
	cfg := rest.CopyConfig(server.ClientConfig)
	cfg.QPS, cfg.Burst = 500, 1000
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver address %q: %w", cfg.Host, err)
	}
	ca, err := servingCertificates(u.Host)
	if err != nil {
		return nil, err
	}
	proxy, err := startAPIProxy(u.Host)
	if err != nil {
		server.TearDownFn()
		return nil, fmt.Errorf("kube-apiserver proxy for pods: %w", err)
	}
	host, port, _ := net.SplitHostPort(proxy.Addr())
	access := nodeagent.APIServer{Host: host, Port: port, CAData: ca}
	return &apiServer{tb: tb, server: server, Config: cfg, podAccess: access, proxy: proxy, tearDown: server.TearDownFn}, nil
}

// Stop shuts kube-apiserver down and waits for it.
func (a *apiServer) Stop() {
	if a.proxy != nil {
		_ = a.proxy.Close()
		a.proxy = nil
	}
	if a.tearDown != nil {
		a.tearDown()
		a.tearDown = nil
	}
}

// servingCertificates are the certificates the API server presents on its
// secure port, PEM-encoded: the ca.crt of its pods' service account mounts.
// (The admin configuration trusts the loopback certificate, which is valid
// for a name pods do not use.)
func servingCertificates(address string) ([]byte, error) {
	conn, err := tls.Dial("tcp", address, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reads the certificates to trust them
	if err != nil {
		return nil, fmt.Errorf("read kube-apiserver serving certificate: %w", err)
	}
	defer func() { _ = conn.Close() }()
	var out []byte
	for _, cert := range conn.ConnectionState().PeerCertificates {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})...)
	}
	return out, nil
}
