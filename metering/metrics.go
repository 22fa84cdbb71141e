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

package metering

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	usageDesc = prometheus.NewDesc("computedomain_metering_usage_total",
		"GPU usage since the earliest interval the node ledgers hold, per team, namespace, DeviceClass and unit (device-seconds, gpu-memory-GiB-seconds, mig-slice-seconds); recomputed from the ledgers on every scrape, so a restart of the metering component reads as a counter reset at most.",
		[]string{"team", "namespace", "device_class", "unit"}, nil)
	billedDesc = prometheus.NewDesc("computedomain_metering_billed_total",
		"Usage in each DeviceClass's billing unit (--billing-unit), per team, namespace and DeviceClass.",
		[]string{"team", "namespace", "device_class", "unit"}, nil)
	lastPullDesc = prometheus.NewDesc("computedomain_metering_ledger_last_pull_timestamp_seconds",
		"Node time of the last successful pull of the node's usage ledger.", []string{"node"}, nil)
	pullErrorsDesc = prometheus.NewDesc("computedomain_metering_ledger_pull_errors_total",
		"Failed pulls of the node's usage ledger.", []string{"node"}, nil)
	openDesc = prometheus.NewDesc("computedomain_metering_open_intervals",
		"Devices held now (intervals without an end), per team and namespace.", []string{"team", "namespace"}, nil)
	refusedLedgersDesc = prometheus.NewDesc("computedomain_metering_refused_ledgers_total",
		"Usage ledgers refused because the node serving them is not theirs (reason ForeignUsageLedger), once per node and ledger ID; none of their records are billed.",
		[]string{"node", "reason"}, nil)
	refusedIntervalsDesc = prometheus.NewDesc("computedomain_metering_refused_intervals_total",
		"Usage intervals refused because their claim does not match the API server (UnknownClaim, ClaimMismatch, NotAllocatedOnNode); not billed.",
		[]string{"node", "reason"}, nil)
	unverifiedDesc = prometheus.NewDesc("computedomain_metering_unverified_intervals",
		"Billed intervals whose claim could not be checked: it was gone before the meter watched claims.", []string{"node"}, nil)
	clockBoundedDesc = prometheus.NewDesc("computedomain_metering_clock_bounded_intervals",
		"Intervals whose node times the meter's clock (or the claim's creation) cut by more than a second: the node's clock is off.", []string{"node"}, nil)
	quarantinedDesc = prometheus.NewDesc("computedomain_metering_quarantined_ledger_files",
		"Usage ledger files the node's GPU plugin moved aside because they could not be read whole; what could not be read is not billed.", []string{"node"}, nil)
)

// Collector exports the meter's figures; it computes them on each scrape.
type Collector struct {
	Meter *Meter
	Units BillingUnits
}

// Describe implements prometheus.Collector.
func (c Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{usageDesc, billedDesc, lastPullDesc, pullErrorsDesc, openDesc,
		refusedLedgersDesc, refusedIntervalsDesc, unverifiedDesc, clockBoundedDesc, quarantinedDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c Collector) Collect(ch chan<- prometheus.Metric) {
	intervals := c.Meter.Intervals()
	for k, v := range Totals(intervals, time.Time{}, time.Time{}) {
		ch <- prometheus.MustNewConstMetric(usageDesc, prometheus.CounterValue, v, k.Team, k.Namespace, k.DeviceClass, string(k.Unit))
		if c.Units.For(k.DeviceClass) == k.Unit {
			ch <- prometheus.MustNewConstMetric(billedDesc, prometheus.CounterValue, v, k.Team, k.Namespace, k.DeviceClass, string(k.Unit))
		}
	}
	type tn struct{ team, ns string }
	open := map[tn]int{}
	for _, iv := range intervals {
		if iv.Open && !iv.Device.AdminAccess {
			open[tn{iv.Team, iv.Namespace}]++
		}
	}
	for k, n := range open {
		ch <- prometheus.MustNewConstMetric(openDesc, prometheus.GaugeValue, float64(n), k.team, k.ns)
	}
	for _, n := range c.Meter.Nodes() {
		if !n.LastPull.IsZero() {
			ch <- prometheus.MustNewConstMetric(lastPullDesc, prometheus.GaugeValue, float64(n.LastPull.UnixNano())/1e9, n.Node)
		}
		ch <- prometheus.MustNewConstMetric(pullErrorsDesc, prometheus.CounterValue, float64(n.Errors), n.Node)
	}
	h := c.Meter.Health()
	for r, n := range h.RefusedLedgers {
		ch <- prometheus.MustNewConstMetric(refusedLedgersDesc, prometheus.CounterValue, float64(n), r.Node, r.Reason)
	}
	for r, n := range h.RefusedIntervals {
		ch <- prometheus.MustNewConstMetric(refusedIntervalsDesc, prometheus.CounterValue, float64(n), r.Node, r.Reason)
	}
	for node, n := range h.Unverified {
		ch <- prometheus.MustNewConstMetric(unverifiedDesc, prometheus.GaugeValue, float64(n), node)
	}
	for node, n := range h.ClockBounded {
		ch <- prometheus.MustNewConstMetric(clockBoundedDesc, prometheus.GaugeValue, float64(n), node)
	}
	for node, n := range h.Quarantined {
		ch <- prometheus.MustNewConstMetric(quarantinedDesc, prometheus.GaugeValue, float64(n), node)
	}
}
