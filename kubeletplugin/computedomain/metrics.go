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

package computedomain

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
)

// Outcomes of a prepare, the values of the prepares metric.
const (
	outcomePrepared = "prepared"
	outcomeWaiting  = "waiting"
	outcomeRefused  = "refused"
	outcomeError    = "error"
)

// Metrics are the plugin's Prometheus metrics, registered on a registry the
// caller owns (one per plugin instance, never the global one).
type Metrics struct {
	prepareDuration *prometheus.HistogramVec
	prepares        *prometheus.CounterVec
	claims          *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers them on reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		prepareDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "compute_domain_kubelet_plugin_prepare_duration_seconds", Help: "Time of one prepare call for one claim, by outcome.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 40},
		}, []string{"outcome"}),
		prepares: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "compute_domain_kubelet_plugin_prepares_total", Help: "Prepare calls by claim kind (channel, daemon) and outcome (prepared, waiting, refused, error).",
		}, []string{"kind", "outcome"}),
		claims: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "compute_domain_kubelet_plugin_claims", Help: "Checkpointed claims by kind and status.",
		}, []string{"kind", "status"}),
	}
	if reg != nil {
		reg.MustRegister(m.prepareDuration, m.prepares, m.claims)
	}
	return m
}

func outcomeOf(err error) string {
	switch {
	case err == nil:
		return outcomePrepared
	case errors.Is(err, ErrWaitingForDomain):
		return outcomeWaiting
	case errors.Is(err, ErrRefused):
		return outcomeRefused
	default:
		return outcomeError
	}
}

func (m *Metrics) observePrepare(kind string, d time.Duration, err error) {
	if kind == "" {
		kind = "unknown"
	}
	o := outcomeOf(err)
	m.prepareDuration.WithLabelValues(o).Observe(d.Seconds())
	m.prepares.WithLabelValues(kind, o).Inc()
}

// setClaims sets the claims gauge from the recorded claims: every kind and
// status, zero included.
func (m *Metrics) setClaims(claims map[string]checkpoint.ClaimState) {
	counts := map[[2]string]int{}
	for _, kind := range []string{"channel", "daemon"} {
		for _, st := range []string{string(checkpoint.PrepareStarted), string(checkpoint.PrepareCompleted)} {
			counts[[2]string{kind, st}] = 0
		}
	}
	for _, cs := range claims {
		if data, ok := claimData(cs.Devices); ok {
			counts[[2]string{data.Kind, string(cs.Status)}]++
		}
	}
	for k, n := range counts {
		m.claims.WithLabelValues(k[0], k[1]).Set(float64(n))
	}
}
