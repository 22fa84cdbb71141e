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
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// benignXids are application-caused errors that do not make the GPU unfit
// (the same list NVIDIA's device plugin skips): graphics engine exception,
// MMU fault, reset channel verification, preemptive cleanup, video processor
// exception, context switch timeout. They taint with effect None so a user can
// see them and select against them, without blocking scheduling.
var benignXids = map[uint64]bool{13: true, 31: true, 43: true, 45: true, 68: true, 109: true}

// HealthOptions tune how conditions clear.
type HealthOptions struct {
	// BenignClearAfter drops a benign Xid taint after this long without the
	// Xid repeating. Default 5 minutes.
	BenignClearAfter time.Duration
	// FatalClearAfter drops a fatal Xid taint after this long without the
	// Xid repeating and with the GPU answering NVML. Default 15 minutes.
	FatalClearAfter time.Duration
	// ProbeInterval is how often every GPU is probed for "lost" and
	// conditions are expired. Default 10 seconds.
	ProbeInterval time.Duration
}

func (o HealthOptions) withDefaults() HealthOptions {
	if o.BenignClearAfter <= 0 {
		o.BenignClearAfter = 5 * time.Minute
	}
	if o.FatalClearAfter <= 0 {
		o.FatalClearAfter = 15 * time.Minute
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = 10 * time.Second
	}
	return o
}

// noGI stands for "no GPU instance exists for this device right now".
const noGI = -2

// condition is one reason a GPU (or one GPU instance of it) is unhealthy.
type condition struct {
	key    string // taint key
	value  string
	effect resourceapi.DeviceTaintEffect
	// gi is the GPU instance the condition is limited to, -1 for the GPU.
	gi       int
	since    time.Time
	lastSeen time.Time
}

// healthMonitor tracks conditions per GPU UUID and turns them into device
// taints. It never removes a device: an unhealthy device stays published,
// tainted, and comes back untainted when its conditions clear.
type healthMonitor struct {
	driverName string
	lib        nvml.Interface
	clock      clock.WithTicker
	opts       HealthOptions
	metrics    *Metrics

	mu    sync.Mutex
	conds map[string][]condition // GPU UUID → conditions
	subs  map[chan struct{}]bool

	// eventsRegistered is closed once the event watch registered its GPUs.
	eventsRegistered chan struct{}
	registeredOnce   sync.Once
}

func newHealthMonitor(driverName string, lib nvml.Interface, clk clock.WithTicker, opts HealthOptions, metrics *Metrics) *healthMonitor {
	return &healthMonitor{driverName: driverName, lib: lib, clock: clk, opts: opts.withDefaults(), metrics: metrics,
		conds: map[string][]condition{}, subs: map[chan struct{}]bool{}, eventsRegistered: make(chan struct{})}
}

func (h *healthMonitor) xidKey() string  { return h.driverName + "/xid" }
func (h *healthMonitor) lostKey() string { return h.driverName + "/gpu-lost" }

// subscribe returns a channel that receives a token after every change.
func (h *healthMonitor) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	h.subs[ch] = true
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}
}

func (h *healthMonitor) notifyLocked() {
	for ch := range h.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// set records or refreshes a condition; true when the taint set changed.
func (h *healthMonitor) setLocked(uuid string, c condition) bool {
	now := h.clock.Now()
	for i, old := range h.conds[uuid] {
		if old.key == c.key && old.gi == c.gi && old.effect == c.effect {
			changed := old.value != c.value
			h.conds[uuid][i].value = c.value
			h.conds[uuid][i].lastSeen = now
			return changed
		}
	}
	c.since, c.lastSeen = now, now
	h.conds[uuid] = append(h.conds[uuid], c)
	return true
}

// recordEvent classifies one NVML event.
func (h *healthMonitor) recordEvent(ctx context.Context, uuid string, ev nvml.EventData) {
	var c condition
	switch {
	case ev.EventType&nvml.EventTypeXidCriticalError != 0:
		effect := resourceapi.DeviceTaintEffectNoSchedule
		if benignXids[ev.EventData] {
			effect = resourceapi.DeviceTaintEffectNone
		}
		c = condition{key: h.xidKey(), value: strconv.FormatUint(ev.EventData, 10), effect: effect}
	case ev.EventType&nvml.EventTypeDoubleBitEccError != 0:
		c = condition{key: h.xidKey(), value: "48", effect: resourceapi.DeviceTaintEffectNoSchedule}
	default:
		return
	}
	c.gi = -1
	if ev.GpuInstanceId != nvml.NoInstanceID {
		c.gi = int(ev.GpuInstanceId)
	}
	klog.FromContext(ctx).Info("GPU health event", "uuid", uuid, "xid", c.value, "effect", c.effect, "gpuInstance", c.gi)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.setLocked(uuid, c) {
		h.notifyLocked()
	}
}

// probe asks every GPU for its memory info: ERROR_GPU_IS_LOST sets the lost
// condition, an answer clears it. It then expires Xid conditions that were
// quiet long enough (fatal ones only while the GPU answers).
func (h *healthMonitor) probe(ctx context.Context, uuids []string) {
	logger := klog.FromContext(ctx)
	lost := map[string]bool{}
	for _, uuid := range uuids {
		dev, r := h.lib.DeviceGetHandleByUUID(uuid)
		if r == nvml.SUCCESS {
			_, r = dev.GetMemoryInfo()
		}
		lost[uuid] = r == nvml.ERROR_GPU_IS_LOST
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock.Now()
	changed := false
	for _, uuid := range uuids {
		if lost[uuid] {
			if h.setLocked(uuid, condition{key: h.lostKey(), value: "true", effect: resourceapi.DeviceTaintEffectNoSchedule, gi: -1}) {
				logger.Info("GPU lost", "uuid", uuid)
				changed = true
			}
		}
		kept := h.conds[uuid][:0]
		for _, c := range h.conds[uuid] {
			if lost[uuid] {
				// The quiet window of a fatal condition starts once the
				// GPU answers again.
				c.lastSeen = now
			}
			drop := false
			switch {
			case c.key == h.lostKey():
				drop = !lost[uuid]
			case c.effect == resourceapi.DeviceTaintEffectNone:
				drop = now.Sub(c.lastSeen) >= h.opts.BenignClearAfter
			default:
				drop = !lost[uuid] && now.Sub(c.lastSeen) >= h.opts.FatalClearAfter
			}
			if drop {
				logger.Info("GPU health condition cleared", "uuid", uuid, "key", c.key, "value", c.value)
				changed = true
				continue
			}
			kept = append(kept, c)
		}
		if len(kept) == 0 {
			delete(h.conds, uuid)
		} else {
			h.conds[uuid] = kept
		}
	}
	if changed {
		h.notifyLocked()
	}
}

// taints maps every published device name to its taints. Conditions of a GPU
// apply to the GPU and to every MIG device on it, except conditions limited
// to one GPU instance, which apply to the MIG device of that instance only:
// a static MIG device by its GI, a partition by the GI prepare created for it
// (partitionGIs: GPU UUID → device name → GI).
func (h *healthMonitor) taints(inv Inventory, partitionGIs map[string]map[string]int) map[string][]resourceapi.DeviceTaint {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string][]resourceapi.DeviceTaint{}
	for _, g := range inv.GPUs {
		conds := h.conds[g.UUID]
		if len(conds) == 0 {
			continue
		}
		// add applies the GPU's conditions to a device living in GPU
		// instance gi (-1: the whole GPU, noGI: no instance now).
		add := func(device string, gi int) {
			for _, c := range conds {
				if c.gi >= 0 && c.gi != gi {
					continue
				}
				out[device] = append(out[device], resourceapi.DeviceTaint{
					Key: c.key, Value: c.value, Effect: c.effect, TimeAdded: &metav1.Time{Time: c.since.Truncate(time.Second)},
				})
			}
		}
		add(gpuDeviceName(g.Minor), -1)
		for _, m := range g.MigDevices {
			add(migDeviceName(g.Minor, m.Profile, m.GIProfileID, m.Placement.Start), m.GIID)
		}
		for _, p := range g.MigProfiles {
			for _, pl := range p.Placements {
				name := migDeviceName(g.Minor, p.Name, p.GIProfileID, pl.Start)
				gi, ok := partitionGIs[g.UUID][name]
				if !ok {
					gi = noGI
				}
				add(name, gi)
			}
		}
	}
	for name, t := range out {
		slices.SortFunc(t, func(a, b resourceapi.DeviceTaint) int {
			if a.Key != b.Key {
				if a.Key < b.Key {
					return -1
				}
				return 1
			}
			if a.Value < b.Value {
				return -1
			}
			if a.Value > b.Value {
				return 1
			}
			return 0
		})
		out[name] = t
	}
	return out
}

// watchEvents registers every GPU for Xid and ECC events and records them
// until ctx ends. A GPU whose events cannot be watched (no event set at all,
// or its registration failed) has no Xid monitoring: that is logged as an
// error naming the GPU and the NVML call, and counted in the
// unmonitored-GPUs gauge. Probing still catches lost GPUs.
func (h *healthMonitor) watchEvents(ctx context.Context, uuids []string) {
	logger := klog.FromContext(ctx)
	set, r := h.lib.EventSetCreate()
	if r != nvml.SUCCESS {
		logger.Error(nvml.ReturnError(h.lib, "EventSetCreate", r), "No Xid monitoring: cannot create the NVML event set", "call", "EventSetCreate", "gpus", uuids)
		h.metrics.setUnmonitoredGPUs(len(uuids))
		return
	}
	defer set.Free()
	unmonitored := 0
	for _, uuid := range uuids {
		if err := h.register(set, uuid); err != nil {
			logger.Error(err, "No Xid monitoring for this GPU", "uuid", uuid)
			unmonitored++
		}
	}
	h.metrics.setUnmonitoredGPUs(unmonitored)
	h.registeredOnce.Do(func() { close(h.eventsRegistered) })
	for ctx.Err() == nil {
		ev, r := set.Wait(1000)
		switch r {
		case nvml.SUCCESS:
		case nvml.ERROR_TIMEOUT:
			continue
		default:
			// A lost GPU can make Wait fail; the probe reports it. Back
			// off a little to not spin.
			select {
			case <-ctx.Done():
			case <-h.clock.After(time.Second):
			}
			continue
		}
		uuid := ""
		if ev.Device != nil {
			uuid, _ = ev.Device.GetUUID()
		}
		if uuid == "" {
			continue
		}
		h.recordEvent(ctx, uuid, ev)
	}
}

// register registers one GPU's Xid and ECC events (those it supports) on set.
// The error names the NVML call that failed.
func (h *healthMonitor) register(set nvml.EventSet, uuid string) error {
	dev, r := h.lib.DeviceGetHandleByUUID(uuid)
	if r != nvml.SUCCESS {
		return nvml.ReturnError(h.lib, "DeviceGetHandleByUUID", r)
	}
	supported, r := dev.GetSupportedEventTypes()
	if r != nvml.SUCCESS {
		supported = nvml.EventTypeXidCriticalError
	}
	want := supported & uint64(nvml.EventTypeXidCriticalError|nvml.EventTypeDoubleBitEccError)
	if r := dev.RegisterEvents(want, set); r != nvml.SUCCESS {
		return nvml.ReturnError(h.lib, "RegisterEvents", r)
	}
	return nil
}

// run probes periodically until ctx ends; uuids lists the GPUs to probe now
// (it grows when lost GPUs come back). Events are registered for the GPUs
// present at start.
func (h *healthMonitor) run(ctx context.Context, uuids func() []string) {
	go h.watchEvents(ctx, uuids())
	t := h.clock.NewTicker(h.opts.ProbeInterval)
	defer t.Stop()
	for {
		h.probe(ctx, uuids())
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// unhealthyDevices counts devices with a NoSchedule or NoExecute taint.
func unhealthyDevices(taints map[string][]resourceapi.DeviceTaint) map[string]bool {
	out := map[string]bool{}
	for name, ts := range taints {
		for _, t := range ts {
			if t.Effect != resourceapi.DeviceTaintEffectNone {
				out[name] = true
			}
		}
	}
	return out
}

// sortedNames returns the map's keys sorted.
func sortedNames[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
