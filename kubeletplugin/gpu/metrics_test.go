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

package gpu

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

func TestMetrics(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	reg := prometheus.NewRegistry()
	d := e.mustDriver(func(_ *Config, deps *Deps) { deps.Metrics = NewMetrics(reg) })
	if _, err := prepareOne(t, d, utiltesting.MakeResourceClaim("a", "default").UID("uid-a").Device("gpu", testDriver, testNode, "gpu-0").Obj()); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareOne(t, d, utiltesting.MakeResourceClaim("b", "default").UID("uid-b").Device("gpu", testDriver, testNode, "gpu-0").Obj()); err == nil {
		t.Fatal("conflict not detected")
	}
	unprepare(t, d, "uid-a")
	if got := metricValue(t, reg, "gpu_kubelet_plugin_prepare_errors_total", "reason", "conflict"); got != 1 {
		t.Errorf("conflict errors = %v, want 1", got)
	}
	if got := metricValue(t, reg, "gpu_kubelet_plugin_prepare_duration_seconds", "", ""); got != 2 {
		t.Errorf("prepare observations = %v, want 2", got)
	}
	if got := metricValue(t, reg, "gpu_kubelet_plugin_unprepare_duration_seconds", "", ""); got != 1 {
		t.Errorf("unprepare observations = %v, want 1", got)
	}
	if got := metricValue(t, reg, "gpu_kubelet_plugin_devices", "state", stateFree); got != 8 {
		t.Errorf("free devices = %v, want 8", got)
	}
	if _, err := prepareOne(t, d, utiltesting.MakeResourceClaim("c", "default").UID("uid-c").Device("gpu", testDriver, testNode, "gpu-4").Obj()); err != nil {
		t.Fatal(err)
	}
	if got := metricValue(t, reg, "gpu_kubelet_plugin_devices", "state", statePrepared); got != 1 {
		t.Errorf("prepared devices = %v, want 1", got)
	}
}

// metricValue returns a counter or gauge value, or a histogram's sample
// count, of the series with the given label (empty label: the only series).
func metricValue(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label != "" && !hasLabel(m, label, value) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	t.Fatalf("metric %s{%s=%q} not found", name, label, value)
	return 0
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}
