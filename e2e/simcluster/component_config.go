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
	"net"
	"time"

	"k8s.io/client-go/rest"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/imexclique"
)

const (
	// OperatorNamespace is the operator's release namespace: the plugins, the
	// controller and the long-lived IMEX daemons run there.
	OperatorNamespace = "computedomain-operator"
	// ComputeDomainDriverName is the compute-domain DRA driver.
	ComputeDomainDriverName = cdv1beta1.ComputeDomainDriverName
	// The operator's binaries, also the component names of
	// Config.ComponentConfig ("<binary>@<node>").
	ControllerComponent     = "compute-domain-controller"
	GPUPluginName           = "gpu-kubelet-plugin"
	ComputeDomainPluginName = "compute-domain-kubelet-plugin"
	DaemonComponent         = "compute-domain-daemon"
)

// CliqueDaemonSelector selects the long-lived IMEX daemon pods of the chart's DaemonSet (one per NVLink clique node).
var CliqueDaemonSelector = imexclique.AppLabelKey + "=" + imexclique.AppLabelValue + "," +
	imexclique.ComponentLabelKey + "=" + imexclique.ComponentLabelValue

// componentConfig is base for a component, with its user agent, wrapped by
// Config.ComponentConfig.
func (c *Cluster) componentConfig(name string, base *rest.Config) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.UserAgent = name
	if c.cfg.ComponentConfig != nil {
		cfg = c.cfg.ComponentConfig(name, cfg)
	}
	return cfg
}

// ownConnection is base for a caller of its own (a test, a benchmark, a user's kubeconfig in-process): its
// clients get a transport, and so a connection, of their own. client-go otherwise gives every configuration
// with the same TLS settings in a process one transport, and the simulated cluster runs kube-scheduler,
// kube-controller-manager and every node agent in this process with the admin credentials: without this, a
// test's requests share the HTTP/2 connections that carry those components' watches (the suite's cluster holds
// 185 watches in all, its operator pods' included; the API server allows 100 streams a connection), and the
// transport fills one connection before it opens the next. On a connection at its limit, a request can meet Go's
// HTTP/2 server still counting a stream that has just ended and be reset with PROTOCOL_ERROR (golang/go#47635:
// seen here by a test's List under load, "stream error: stream ID 20987; PROTOCOL_ERROR; received from peer").
// On a real cluster a kubectl or a test has a connection of its own.
func ownConnection(base *rest.Config) *rest.Config {
	cfg := rest.CopyConfig(base)
	// A dial function makes client-go build a new transport for every client of cfg, none cached.
	cfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return cfg
}
