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
	"encoding/json"
	"maps"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/usage"
)

// usageFacts is what billing needs to know of a prepared device, kept with it
// in the checkpoint so that the usage ledger can be written (or rewritten
// after a crash) from the checkpoint alone.
type usageFacts struct {
	Class              string `json:"class,omitempty"`
	MemoryBytes        uint64 `json:"memoryBytes,omitempty"`
	Profile            string `json:"profile,omitempty"`
	MemorySlices       int    `json:"memorySlices,omitempty"`
	ParentMemorySlices int    `json:"parentMemorySlices,omitempty"`
	Sharing            string `json:"sharing,omitempty"`
}

// requestClass is the DeviceClass of the claim's request (or firstAvailable
// subrequest "<request>/<subrequest>") that got a device.
func requestClass(claim *resourceapi.ResourceClaim, request string) string {
	name, sub, _ := strings.Cut(request, "/")
	for _, r := range claim.Spec.Devices.Requests {
		if r.Name != name {
			continue
		}
		if sub == "" {
			if r.Exactly != nil {
				return r.Exactly.DeviceClassName
			}
			return ""
		}
		for _, s := range r.FirstAvailable {
			if s.Name == sub {
				return s.DeviceClassName
			}
		}
	}
	return ""
}

// planUsage records the device's billing facts; p.config must be resolved.
func (s *nodeState) planUsage(claim *resourceapi.ResourceClaim, request string, p *preparedDevice) {
	f := &usageFacts{Class: requestClass(claim, request)}
	strategy, _, _ := sharingOf(p.config)
	f.Sharing = string(strategy)
	for _, g := range s.inventory.GPUs {
		if g.UUID != p.Data.ParentUUID {
			continue
		}
		f.ParentMemorySlices = g.MemorySlices()
		switch {
		case p.partition != nil:
			f.MemoryBytes, f.Profile, f.MemorySlices = p.partition.profile.Capacities.MemoryBytes, p.partition.profile.Name, p.partition.placement.Size
		case p.Data.Type == deviceTypeMig:
			for _, m := range g.MigDevices {
				if m.UUID == p.Data.UUID {
					f.MemoryBytes, f.Profile, f.MemorySlices = m.Capacities.MemoryBytes, m.Profile, m.Placement.Size
				}
			}
		default:
			f.MemoryBytes = g.MemoryBytes
		}
	}
	p.Data.Usage = f
}

// usageDevices are the ledger's view of a recorded claim's devices.
func usageDevices(cs checkpoint.ClaimState) []usage.Device {
	out := make([]usage.Device, 0, len(cs.Devices))
	for _, dev := range cs.Devices {
		var data deviceData
		_ = json.Unmarshal(dev.Data, &data)
		u := usage.Device{
			Name: dev.Device, Type: data.Type, UUID: data.UUID, ParentUUID: data.ParentUUID, AdminAccess: dev.AdminAccess,
			ShareID: dev.ShareID, ConsumedCapacity: maps.Clone(dev.ConsumedCapacity),
		}
		if f := data.Usage; f != nil {
			u.Class, u.MemoryBytes, u.Profile, u.MemorySlices, u.ParentMemorySlices, u.Sharing = f.Class, f.MemoryBytes, f.Profile, f.MemorySlices, f.ParentMemorySlices, f.Sharing
		}
		out = append(out, u)
	}
	return out
}

func intervalOf(uid string, cs checkpoint.ClaimState) usage.IntervalKey {
	return usage.IntervalKey{ClaimUID: uid, Start: cs.PreparedAt.UTC()}
}

// syncUsageLocked makes the usage ledger agree with the checkpoint: every
// prepared claim has its interval (from its PreparedAt) and no other interval
// is open. It is what makes the ledger crash-safe: whatever step a crash
// interrupted, the next sync (at start, after every prepare and unprepare,
// and periodically) writes what is missing, and never a second start of an
// interval the ledger holds, open or closed. Errors are logged: a claim is not
// failed for metering, and the next sync retries.
func (s *nodeState) syncUsageLocked(ctx context.Context) {
	if s.usage == nil {
		return
	}
	logger := klog.FromContext(ctx)
	claims := s.ledger.Claims()
	now := s.clock.Now()
	want := map[usage.IntervalKey]bool{}
	var recs []usage.Record
	for _, uid := range slices.Sorted(maps.Keys(claims)) {
		cs := claims[uid]
		if cs.Status != checkpoint.PrepareCompleted {
			continue
		}
		if cs.PreparedAt.IsZero() {
			// Prepared by a plugin without a ledger: billed from now.
			cs.PreparedAt = now
			if err := s.ledger.SaveClaim(uid, cs); err != nil {
				logger.Error(err, "Recording the usage start of a claim prepared before the usage ledger failed", "claimUID", uid)
				continue
			}
		}
		k := intervalOf(uid, cs)
		want[k] = true
		if open, closed := s.usage.Recorded(k); open || closed {
			// Closed: the end was written and the unprepare it belongs to
			// did not finish; the kubelet unprepares again.
			continue
		}
		recs = append(recs, usage.Record{Kind: usage.KindStart, Time: k.Start, Start: k.Start, ClaimUID: uid, Namespace: cs.Namespace, Name: cs.Name, Devices: usageDevices(cs)})
	}
	for k := range s.usage.OpenIntervals() {
		if !want[k] {
			recs = append(recs, usage.Record{Kind: usage.KindEnd, Time: now, Start: k.Start, ClaimUID: k.ClaimUID})
		}
	}
	if len(recs) == 0 {
		return
	}
	s.crash.At("usage-pending")
	if _, err := s.usage.Append(recs...); err != nil {
		logger.Error(err, "Writing the usage ledger failed; retrying at the next sync")
	}
}

// endUsageLocked closes a prepared claim's interval before its devices are
// released. A crash after it leaves the claim recorded as prepared with its
// interval closed, which no sync reopens.
func (s *nodeState) endUsageLocked(ctx context.Context, uid string, cs checkpoint.ClaimState) {
	if s.usage == nil || cs.Status != checkpoint.PrepareCompleted || cs.PreparedAt.IsZero() {
		return
	}
	k := intervalOf(uid, cs)
	if open, _ := s.usage.Recorded(k); !open {
		return
	}
	if _, err := s.usage.Append(usage.Record{Kind: usage.KindEnd, Time: s.clock.Now(), Start: k.Start, ClaimUID: uid}); err != nil {
		// The sync after the claim is forgotten closes the interval.
		klog.FromContext(ctx).Error(err, "Writing the end of a usage interval failed; retrying at the next sync", "claimUID", uid)
		return
	}
	s.crash.At("unprepare-usage-ended")
}

// reopenUsageLocked handles a claim the kubelet prepares again after its
// interval was closed (an unprepare that did not finish): it is in use again
// from now, a new interval.
func (s *nodeState) reopenUsageLocked(uid string, cs checkpoint.ClaimState) error {
	if s.usage == nil || cs.PreparedAt.IsZero() {
		return nil
	}
	if _, closed := s.usage.Recorded(intervalOf(uid, cs)); !closed {
		return nil
	}
	cs.PreparedAt = s.clock.Now()
	return s.ledger.SaveClaim(uid, cs)
}

// reportUsageQuarantine says which ledger files Open moved aside: the node
// keeps serving, and the ledger goes on with what could be read (the
// metering component also sees them in every page and raises an event).
func (s *nodeState) reportUsageQuarantine(ctx context.Context) {
	if s.usage == nil {
		return
	}
	q := s.usage.Quarantined()
	s.metrics.setUsageQuarantined(len(q))
	for _, f := range q {
		klog.FromContext(ctx).Error(nil, "Usage ledger could not be read whole; moved it aside and went on with what could be read",
			"file", f.File, "lines", f.Lines, "reason", f.Reason, "ledger", s.usage.ID())
	}
}

// compactUsage drops closed intervals older than the retention.
func (s *nodeState) compactUsage(ctx context.Context) {
	if s.usage == nil {
		return
	}
	n, err := s.usage.Compact(s.clock.Now().Add(-s.cfg.UsageRetention))
	if err != nil {
		klog.FromContext(ctx).Error(err, "Compacting the usage ledger failed")
		return
	}
	if n > 0 {
		klog.FromContext(ctx).V(2).Info("Compacted the usage ledger", "droppedIntervals", n, "retention", s.cfg.UsageRetention)
	}
}
