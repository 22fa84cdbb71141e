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

package usage

import (
	"fmt"
	"time"
)

// Kind is what a record says about an interval.
type Kind string

const (
	// KindStart opens an interval: the claim's devices were prepared.
	KindStart Kind = "start"
	// KindEnd closes the interval (ClaimUID, Start): the devices were
	// unprepared, or the plugin found the claim gone.
	KindEnd Kind = "end"
)

// Record is one line of the ledger.
type Record struct {
	// Seq numbers the records of one ledger from 1, without gaps when
	// written; compaction leaves gaps, never reuses a number.
	Seq  uint64    `json:"seq"`
	Kind Kind      `json:"kind"`
	Time time.Time `json:"time"`
	// ClaimUID and Start identify the interval. A start record's Start is its
	// Time.
	ClaimUID string    `json:"claimUID"`
	Start    time.Time `json:"start"`
	// Namespace, Name and Devices are set on start records.
	Namespace string   `json:"namespace,omitempty"`
	Name      string   `json:"name,omitempty"`
	Devices   []Device `json:"devices,omitempty"`
}

// Device is what billing needs to know about one device of an interval.
type Device struct {
	// Name is the published device name (gpu-0, gpu-0-mig-1g5gb-19-2).
	Name string `json:"name"`
	// Class is the DeviceClass of the claim's request that got the device
	// (empty when the claim did not say).
	Class string `json:"class,omitempty"`
	// Type is gpu or mig.
	Type string `json:"type"`
	// UUID of the device (for a MIG device created at prepare, its UUID
	// then) and of its GPU.
	UUID       string `json:"uuid,omitempty"`
	ParentUUID string `json:"parentUUID,omitempty"`
	// MemoryBytes is the device's GPU memory (a MIG device's own).
	MemoryBytes uint64 `json:"memoryBytes"`
	// Profile and MemorySlices describe a MIG device; ParentMemorySlices is
	// how many memory slices its GPU has.
	Profile            string `json:"profile,omitempty"`
	MemorySlices       int    `json:"memorySlices,omitempty"`
	ParentMemorySlices int    `json:"parentMemorySlices,omitempty"`
	// Sharing is the claim's sharing strategy for the device (TimeSlicing,
	// MPS), empty for exclusive use.
	Sharing string `json:"sharing,omitempty"`
	// AdminAccess devices are monitored next to their owner, not used: they
	// are not billed.
	AdminAccess bool `json:"adminAccess,omitempty"`
	// ShareID is set when the claim holds one share of the device
	// (consumable capacity); ConsumedCapacity is what the share consumes
	// (capacity name → quantity, e.g. "memory": "4Gi"), which billing charges
	// in place of the whole device.
	ShareID          string            `json:"shareID,omitempty"`
	ConsumedCapacity map[string]string `json:"consumedCapacity,omitempty"`
}

// IntervalKey identifies one interval of one ledger.
type IntervalKey struct {
	ClaimUID string
	Start    time.Time
}

func (r Record) key() IntervalKey { return IntervalKey{ClaimUID: r.ClaimUID, Start: r.Start.UTC()} }

// validate checks what a reader relies on.
func (r Record) validate() error {
	switch r.Kind {
	case KindStart:
		if !r.Start.Equal(r.Time) {
			return fmt.Errorf("start record %d: start %s differs from time %s", r.Seq, r.Start, r.Time)
		}
	case KindEnd:
		if r.Time.Before(r.Start) {
			return fmt.Errorf("end record %d: time %s before its interval's start %s", r.Seq, r.Time, r.Start)
		}
	default:
		return fmt.Errorf("record %d: kind %q, allowed: %s, %s", r.Seq, r.Kind, KindStart, KindEnd)
	}
	if r.ClaimUID == "" {
		return fmt.Errorf("record %d: no claimUID", r.Seq)
	}
	return nil
}
