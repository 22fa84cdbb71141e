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
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/computedomain-operator/computedomain-operator/internal/usage"
)

// Unit is a billing unit.
type Unit string

const (
	// DeviceSeconds counts a device held for a second as 1 (a device shared
	// by k claims at once as 1/k each).
	DeviceSeconds Unit = "device-seconds"
	// GPUMemoryGiBSeconds counts the device's GPU memory in GiB per second.
	GPUMemoryGiBSeconds Unit = "gpu-memory-GiB-seconds"
	// MIGSliceSeconds counts a MIG device's memory slices per second (a
	// 3g.40gb is 3, a 1g.10gb 1); full GPUs count none.
	MIGSliceSeconds Unit = "mig-slice-seconds"
)

// Units are all units, in report order.
var Units = []Unit{DeviceSeconds, GPUMemoryGiBSeconds, MIGSliceSeconds}

// ParseUnit names the allowed units when s is none of them.
func ParseUnit(s string) (Unit, error) {
	for _, u := range Units {
		if string(u) == s {
			return u, nil
		}
	}
	names := make([]string, len(Units))
	for i, u := range Units {
		names[i] = string(u)
	}
	return "", fmt.Errorf("unit %q: allowed: %s", s, strings.Join(names, ", "))
}

// Interval is one device of one claim, held from Start to End.
type Interval struct {
	Ledger    string
	Node      string
	ClaimUID  string
	Namespace string
	Claim     string
	// Team is the claim namespace's team label when the interval was first
	// seen; Pods the claim's pods then.
	Team   string
	Pods   []string
	Device usage.Device
	Start  time.Time
	// End is when the device was released; for an open interval, the
	// last pull, and Open is set. Both are the node's times bounded by the
	// meter's own clock (no later than the pull that saw them).
	End  time.Time
	Open bool
	// Verified says the API server confirmed the claim, its namespace and
	// its devices on Node; an interval not verified is billed on the node's
	// word (its claim was gone before the meter could see it).
	Verified bool
}

// shareMemoryGiB is the GPU memory a share of a device consumes (consumable
// capacity), in GiB; false for a device held whole and for a share that
// consumes no memory (unlimited mode without a memory request).
func shareMemoryGiB(d usage.Device) (float64, bool) {
	if d.ShareID == "" {
		return 0, false
	}
	q, err := resource.ParseQuantity(d.ConsumedCapacity["memory"])
	if err != nil || q.Sign() <= 0 {
		return 0, false
	}
	return float64(q.Value()) / (1 << 30), true
}

// amount is what one second of the device is worth in u.
func amount(d usage.Device, u Unit) float64 {
	switch u {
	case DeviceSeconds:
		return 1
	case GPUMemoryGiBSeconds:
		return float64(d.MemoryBytes) / (1 << 30)
	case MIGSliceSeconds:
		if d.Type == "mig" {
			return float64(d.MemorySlices)
		}
	}
	return 0
}

// Key is one row of usage.
type Key struct {
	Team, Namespace, DeviceClass string
	Unit                         Unit
}

// Totals adds up the intervals clipped to [from, to) (zero times: no bound)
// per team, namespace, class and unit. A device held by several claims at
// once (a shared device) is split evenly among them for the time they
// overlap, except in GPU-memory GiB-seconds for a consumable share that
// consumes memory: it is billed exactly the memory it consumes.
// Admin-access devices (monitoring) are not billed.
func Totals(intervals []Interval, from, to time.Time) map[Key]float64 {
	type devKey struct{ node, device string }
	byDevice := map[devKey][]int{}
	for i, iv := range intervals {
		if iv.Device.AdminAccess {
			continue
		}
		k := devKey{iv.Node, iv.Device.Name}
		byDevice[k] = append(byDevice[k], i)
	}
	out := map[Key]float64{}
	for _, idx := range byDevice {
		// Cut the device's time at every start and end; in each piece,
		// each of the k intervals holding the device gets 1/k of it.
		var cuts []time.Time
		clip := func(iv Interval) (time.Time, time.Time) {
			s, e := iv.Start, iv.End
			if !from.IsZero() && s.Before(from) {
				s = from
			}
			if !to.IsZero() && e.After(to) {
				e = to
			}
			return s, e
		}
		for _, i := range idx {
			s, e := clip(intervals[i])
			if e.After(s) {
				cuts = append(cuts, s, e)
			}
		}
		slices.SortFunc(cuts, func(a, b time.Time) int { return a.Compare(b) })
		cuts = slices.CompactFunc(cuts, func(a, b time.Time) bool { return a.Equal(b) })
		for c := 0; c+1 < len(cuts); c++ {
			ps, pe := cuts[c], cuts[c+1]
			var holders []int
			for _, i := range idx {
				s, e := clip(intervals[i])
				if !s.After(ps) && !e.Before(pe) {
					holders = append(holders, i)
				}
			}
			secs := pe.Sub(ps).Seconds()
			for _, i := range holders {
				iv := intervals[i]
				for _, u := range Units {
					v := secs * amount(iv.Device, u) / float64(len(holders))
					if gib, ok := shareMemoryGiB(iv.Device); ok && u == GPUMemoryGiBSeconds {
						// A share is billed the memory it consumes, whoever
						// else holds the device.
						v = secs * gib
					}
					out[Key{Team: iv.Team, Namespace: iv.Namespace, DeviceClass: iv.Device.Class, Unit: u}] += v
				}
			}
		}
	}
	return out
}
