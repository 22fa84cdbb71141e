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

package checkpoint

import (
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// Status is where a claim stands in its preparation.
type Status string

const (
	// PrepareStarted is recorded before the first side effect of a prepare.
	// A claim still in this state after a restart was interrupted half-way.
	PrepareStarted Status = "PrepareStarted"
	// PrepareCompleted is recorded once every side effect succeeded; the stored
	// devices are what a repeated prepare returns.
	PrepareCompleted Status = "PrepareCompleted"
)

// Checkpoint is the in-memory state of one node plugin.
type Checkpoint struct {
	// BootID is the node boot the state belongs to.
	BootID string `json:"bootID"`
	// Claims holds one entry per claim UID.
	Claims map[string]ClaimState `json:"claims"`
}

// ClaimState is what the plugin did (or started to do) for one ResourceClaim.
type ClaimState struct {
	Namespace string           `json:"namespace"`
	Name      string           `json:"name"`
	Status    Status           `json:"status"`
	Devices   []PreparedDevice `json:"devices,omitempty"`
	// PreparedAt is when the claim became PrepareCompleted: the start of its
	// usage interval, which with the claim UID identifies the interval in
	// the plugin's usage ledger (internal/usage). Zero in checkpoints of
	// plugins without a ledger.
	PreparedAt time.Time `json:"preparedAt,omitzero"`
}

// PreparedDevice is one allocated device of a claim.
type PreparedDevice struct {
	Requests     []string `json:"requests,omitempty"`
	Pool         string   `json:"pool"`
	Device       string   `json:"device"`
	CDIDeviceIDs []string `json:"cdiDeviceIDs,omitempty"`
	// AdminAccess marks a device prepared for monitoring next to its owner
	// (DRA admin access): it does not own the device.
	AdminAccess bool `json:"adminAccess,omitempty"`
	// ShareID is set for one share of a device that allows multiple
	// allocations (consumable capacity): the scheduler's share ID. Shares of
	// one device do not own it against each other, only against a claim that
	// holds the device whole.
	ShareID string `json:"shareID,omitempty"`
	// ConsumedCapacity is what the share consumes of the device's capacity
	// (the allocation result's consumedCapacity), as quantities.
	ConsumedCapacity map[string]string `json:"consumedCapacity,omitempty"`
	// Data is driver-specific state needed to undo the preparation (for
	// example the MIG instance created for a partitionable device).
	Data json.RawMessage `json:"data,omitempty"`
}

// New returns an empty checkpoint for the given boot.
func New(bootID string) Checkpoint {
	return Checkpoint{BootID: bootID, Claims: map[string]ClaimState{}}
}

// DeviceOwner returns the UID of the claim (other than exceptUID) that holds the
// device, in any state, against a claim that wants it whole (share false) or
// as one share (share true). Admin-access entries do not own a device; shares
// do not own it against another share.
func (c Checkpoint) DeviceOwner(pool, device, exceptUID string, share bool) (string, bool) {
	uids := make([]string, 0, len(c.Claims))
	for uid := range c.Claims {
		uids = append(uids, uid)
	}
	slices.Sort(uids) // deterministic answer when state is already inconsistent
	for _, uid := range uids {
		if uid == exceptUID {
			continue
		}
		for _, d := range c.Claims[uid].Devices {
			if d.Pool == pool && d.Device == device && !d.AdminAccess && (!share || d.ShareID == "") {
				return uid, true
			}
		}
	}
	return "", false
}

// Clone returns a deep copy, so callers can stage a change and only keep it once
// it was saved.
func (c Checkpoint) Clone() Checkpoint {
	out := Checkpoint{BootID: c.BootID, Claims: make(map[string]ClaimState, len(c.Claims))}
	for uid, cs := range c.Claims {
		devs := make([]PreparedDevice, len(cs.Devices))
		for i, d := range cs.Devices {
			devs[i] = PreparedDevice{
				Requests:     slices.Clone(d.Requests),
				Pool:         d.Pool,
				Device:       d.Device,
				CDIDeviceIDs: slices.Clone(d.CDIDeviceIDs),
				AdminAccess:  d.AdminAccess,
				ShareID:      d.ShareID,
				Data:         slices.Clone(d.Data),
			}
			if d.ConsumedCapacity != nil {
				devs[i].ConsumedCapacity = maps.Clone(d.ConsumedCapacity)
			}
		}
		if len(devs) == 0 {
			devs = nil
		}
		cs.Devices = devs
		out.Claims[uid] = cs
	}
	return out
}
