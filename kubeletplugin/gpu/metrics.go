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
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the plugin's Prometheus metrics, registered on a registry the
// caller owns (one per plugin instance, never the global one).
type Metrics struct {
	prepareDuration   prometheus.Histogram
	unprepareDuration prometheus.Histogram
	prepareErrors     *prometheus.CounterVec
	unprepareErrors   *prometheus.CounterVec
	devices           *prometheus.GaugeVec
	unmonitoredGPUs   prometheus.Gauge
	usageQuarantined  prometheus.Gauge
}

// Device states of the devices gauge.
const (
	stateFree      = "free"
	statePrepared  = "prepared"
	stateUnhealthy = "unhealthy"
)

// NewMetrics creates the metrics and registers them on reg (nil: not
// registered, e.g. in tests and the inspect command).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	buckets := []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
	m := &Metrics{
		prepareDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "gpu_kubelet_plugin_prepare_duration_seconds", Help: "Time to prepare one ResourceClaim.", Buckets: buckets,
		}),
		unprepareDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "gpu_kubelet_plugin_unprepare_duration_seconds", Help: "Time to unprepare one ResourceClaim.", Buckets: buckets,
		}),
		prepareErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpu_kubelet_plugin_prepare_errors_total", Help: "Failed claim prepares by reason.",
		}, []string{"reason"}),
		unprepareErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpu_kubelet_plugin_unprepare_errors_total", Help: "Failed claim unprepares by reason.",
		}, []string{"reason"}),
		devices: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpu_kubelet_plugin_devices", Help: "Published devices by state (free, prepared, unhealthy).",
		}, []string{"state"}),
		unmonitoredGPUs: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpu_kubelet_plugin_gpus_without_xid_monitoring",
			Help: "GPUs whose NVML Xid and ECC events are not watched (the event set or their registration failed); only losing the GPU is noticed on them.",
		}),
		usageQuarantined: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpu_kubelet_plugin_usage_ledger_quarantined_files",
			Help: "Usage ledger files moved aside at start because they could not be read whole (a damaged line, another node's ledger); the ledger goes on with what could be read.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.prepareDuration, m.unprepareDuration, m.prepareErrors, m.unprepareErrors, m.devices, m.unmonitoredGPUs, m.usageQuarantined)
	}
	return m
}

func (m *Metrics) observePrepare(d time.Duration, err error) {
	m.prepareDuration.Observe(d.Seconds())
	if err != nil {
		m.prepareErrors.WithLabelValues(reasonOf(err)).Inc()
	}
}

func (m *Metrics) observeUnprepare(d time.Duration, err error) {
	m.unprepareDuration.Observe(d.Seconds())
	if err != nil {
		m.unprepareErrors.WithLabelValues(reasonOf(err)).Inc()
	}
}

func (m *Metrics) setDeviceStates(counts map[string]int) {
	for _, s := range []string{stateFree, statePrepared, stateUnhealthy} {
		m.devices.WithLabelValues(s).Set(float64(counts[s]))
	}
}

func (m *Metrics) setUnmonitoredGPUs(n int) { m.unmonitoredGPUs.Set(float64(n)) }

func (m *Metrics) setUsageQuarantined(n int) { m.usageQuarantined.Set(float64(n)) }
