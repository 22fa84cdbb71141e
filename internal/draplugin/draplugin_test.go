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

package draplugin

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestServeMetricsServesTheGivenRegistryOnly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_plugin_events_total", Help: "x"})
	reg.MustRegister(c)
	c.Add(3)
	addr, err := ServeMetrics(ctx, "127.0.0.1:0", reg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !strings.Contains(string(body), "test_plugin_events_total 3") {
		t.Errorf("metrics body lacks the counter:\n%s", body)
	}
	if strings.Contains(string(body), "go_goroutines") {
		t.Error("the process-global registry leaked into the plugin's endpoint")
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get("http://" + addr.String() + "/metrics")
		if err != nil {
			break
		}
		_ = resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("metrics server still serving after cancel")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestServeMetricsRejectsABadAddress(t *testing.T) {
	if _, err := ServeMetrics(context.Background(), "not-an-address", prometheus.NewRegistry()); err == nil || !strings.Contains(err.Error(), `metrics address "not-an-address"`) {
		t.Errorf("error = %v", err)
	}
}

func TestStartNeedsDriverNodeAndClient(t *testing.T) {
	if _, err := Start(context.Background(), nil, Options{DriverName: "gpu.nvidia.com"}); err == nil {
		t.Error("Start without node name and client succeeded")
	}
}

func TestPluginDataDir(t *testing.T) {
	o := Options{DriverName: "gpu.nvidia.com", PluginsDir: "/var/lib/kubelet/plugins"}
	if got := o.PluginDataDir(); got != "/var/lib/kubelet/plugins/gpu.nvidia.com" {
		t.Errorf("PluginDataDir = %q", got)
	}
}
