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
	"context"
	"fmt"
	"strings"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
)

// healthReportInterval is how often WatchHealthStatus reports without a
// change; healthCheckTimeout is how long the kubelet trusts a report.
const (
	healthReportInterval = 10 * time.Second
	healthCheckTimeout   = 30 * time.Second
)

// WatchHealthStatus implements kubeletplugin.DRAPlugin (KEP-4680): a report
// of every published device now, on every health change, and every 10 s.
func (d *Driver) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	changes, cancel := d.health.subscribe()
	defer cancel()
	t := d.clock.NewTicker(healthReportInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case reports <- d.healthReport():
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changes:
		case <-t.C():
		}
	}
}

// healthReport is every published device with its taints: unhealthy when
// one of them has an effect.
func (d *Driver) healthReport() kubeletplugin.DeviceHealthReport {
	inv, claims := d.state.snapshot()
	taints := d.health.taints(inv, createdMigInstances(claims))
	now := d.clock.Now()
	report := kubeletplugin.DeviceHealthReport{}
	for _, name := range publishedDeviceNames(inv, d.cfg.PartitionableMIG, d.cfg.passthrough()) {
		h := kubeletplugin.DeviceHealth{PoolName: d.poolName(), DeviceName: name, Health: kubeletplugin.HealthStatusHealthy,
			LastUpdated: now, HealthCheckTimeout: healthCheckTimeout}
		var msgs []string
		for _, t := range taints[name] {
			msgs = append(msgs, fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect))
			if t.Effect != resourceapi.DeviceTaintEffectNone {
				h.Health = kubeletplugin.HealthStatusUnhealthy
			}
		}
		h.Message = strings.Join(msgs, ", ")
		report.Devices = append(report.Devices, h)
	}
	return report
}

// updateDeviceMetrics sets the devices gauge from the state now.
func (s *nodeState) updateDeviceMetrics() {
	inv, claims := s.snapshot()
	s.metrics.setDeviceStates(s.deviceStates(inv, claims))
}

// updateDeviceMetricsLocked is updateDeviceMetrics for callers that hold
// d.state.mu.
func (s *nodeState) updateDeviceMetricsLocked() {
	s.metrics.setDeviceStates(s.deviceStates(s.inventory, s.ledger.Claims()))
}

// deviceStates counts published devices as free, prepared or unhealthy
// (unhealthy wins).
func (s *nodeState) deviceStates(inv Inventory, claims map[string]checkpoint.ClaimState) map[string]int {
	unhealthy := unhealthyDevices(s.health.taints(inv, createdMigInstances(claims)))
	prepared := preparedDeviceNames(claims)
	out := map[string]int{}
	for _, name := range publishedDeviceNames(inv, s.cfg.PartitionableMIG, s.cfg.passthrough()) {
		switch {
		case unhealthy[name]:
			out[stateUnhealthy]++
		case prepared[name]:
			out[statePrepared]++
		default:
			out[stateFree]++
		}
	}
	return out
}

// RediscoverLostGPUs re-reads the node when GPUs were lost at discovery and
// republishes once any of them answers again.
func (d *Driver) RediscoverLostGPUs(ctx context.Context) error {
	inv, _ := d.state.snapshot()
	lost := len(inv.LostGPUs)
	if lost == 0 {
		return nil
	}
	inv, err := d.state.discover(ctx)
	if err != nil {
		return err
	}
	if len(inv.LostGPUs) >= lost {
		return nil
	}
	d.state.mu.Lock()
	d.state.inventory = inv
	d.state.updateDeviceMetricsLocked()
	d.state.mu.Unlock()
	klog.FromContext(ctx).Info("Lost GPUs are back", "gpus", len(inv.GPUs), "stillLost", len(inv.LostGPUs))
	return d.Publish(ctx)
}
