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
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/featuregates"
)

// SharesMode is how GPUs are published for consumable shares (Kubernetes'
// consumable capacity, KEP-5075), with NVIDIA's names and semantics
// (--consumable-shares).
type SharesMode string

const (
	// SharesDisabled publishes every device for one claim at a time.
	SharesDisabled SharesMode = "disabled"
	// SharesUnlimited lets any number of claims share a device; a claim may
	// ask for memory (default 0).
	SharesUnlimited SharesMode = "unlimited"
	// SharesMemory makes memory the shared capacity: a claim that does not
	// ask for memory gets all of it, and the scheduler never hands out more
	// than the device has.
	SharesMemory SharesMode = "memory"
	// SharesCount splits a device into Shares.Count shares (the
	// "shares" capacity, one per claim by default); memory is as in
	// SharesUnlimited.
	SharesCount SharesMode = "count"
)

// Capacity names of consumable shares: memory is the device's own, shares is
// added in SharesCount mode.
const capShares resourceapi.QualifiedName = "shares"

// sharesMemoryStep is the memory request granularity (NVIDIA's 1Mi).
const sharesMemoryStep = 1 << 20

// Shares is the parsed --consumable-shares setting.
type Shares struct {
	Mode SharesMode
	// Count is the number of shares per device in SharesCount mode.
	Count int
}

// Enabled is true when devices are published for several claims.
func (c Shares) Enabled() bool { return c.Mode != "" && c.Mode != SharesDisabled }

// String is the flag's spelling.
func (c Shares) String() string {
	switch c.Mode {
	case SharesCount:
		return strconv.Itoa(c.Count)
	case "":
		return string(SharesDisabled)
	}
	return string(c.Mode)
}

// ParseShares reads --consumable-shares (env CONSUMABLE_SHARES):
// disabled (or empty), unlimited, memory, or a positive integer.
func ParseShares(s string) (Shares, error) {
	switch v := strings.TrimSpace(s); v {
	case "", string(SharesDisabled):
		return Shares{Mode: SharesDisabled}, nil
	case string(SharesUnlimited), string(SharesMemory):
		return Shares{Mode: SharesMode(v)}, nil
	default:
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return Shares{}, fmt.Errorf("--consumable-shares %q: allowed: disabled, unlimited, memory, or a positive integer (shares per GPU)", s)
		}
		return Shares{Mode: SharesCount, Count: n}, nil
	}
}

// CheckShares refuses consumable shares whose gate is off.
func CheckShares(c Shares, gates featuregates.Set) error {
	if c.Enabled() && !gates.Enabled(ConsumableShares) {
		return fmt.Errorf("--consumable-shares %s needs the feature gate %s (--feature-gates %s=true, chart value featureGates.%s)", c, ConsumableShares, ConsumableShares, ConsumableShares)
	}
	return nil
}

// shareable applies the mode to a published device: it allows multiple
// allocations and gets NVIDIA's request policies. The memory capacity is
// rounded down to the 1Mi step, because a policy's max and default must be
// multiples of its step and no larger than the capacity. A device without a
// memory capacity is left alone.
func (c Shares) shareable(dev *resourceapi.Device) {
	if !c.Enabled() {
		return
	}
	mem, ok := dev.Capacity[capMemory]
	if !ok {
		return
	}
	maxMem := resource.NewQuantity(mem.Value.Value()/sharesMemoryStep*sharesMemoryStep, resource.BinarySI)
	step := resource.NewQuantity(sharesMemoryStep, resource.BinarySI)
	zero := resource.NewQuantity(0, resource.BinarySI)
	policy := &resourceapi.CapacityRequestPolicy{
		Default:    ptr.To(zero.DeepCopy()),
		ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(zero.DeepCopy()), Max: ptr.To(maxMem.DeepCopy()), Step: ptr.To(step.DeepCopy())},
	}
	if c.Mode == SharesMemory {
		policy.Default = ptr.To(maxMem.DeepCopy())
		policy.ValidRange.Min = ptr.To(step.DeepCopy())
	}
	capacity := make(map[resourceapi.QualifiedName]resourceapi.DeviceCapacity, len(dev.Capacity)+1)
	for k, v := range dev.Capacity {
		capacity[k] = v
	}
	capacity[capMemory] = resourceapi.DeviceCapacity{Value: maxMem.DeepCopy(), RequestPolicy: policy}
	if c.Mode == SharesCount {
		n := resource.NewQuantity(int64(c.Count), resource.DecimalSI)
		one := resource.NewQuantity(1, resource.DecimalSI)
		capacity[capShares] = resourceapi.DeviceCapacity{Value: n.DeepCopy(), RequestPolicy: &resourceapi.CapacityRequestPolicy{
			Default:    ptr.To(one.DeepCopy()),
			ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(one.DeepCopy()), Max: ptr.To(n.DeepCopy()), Step: ptr.To(one.DeepCopy())},
		}}
	}
	dev.Capacity = capacity
	dev.AllowMultipleAllocations = ptr.To(true)
}

// consumedCapacity is what an allocation result's share consumes, as
// quantities; nil for a device allocated whole.
func consumedCapacity(r resourceapi.DeviceRequestAllocationResult) map[string]string {
	if r.ShareID == nil || len(r.ConsumedCapacity) == 0 {
		return nil
	}
	out := make(map[string]string, len(r.ConsumedCapacity))
	for name, q := range r.ConsumedCapacity {
		out[string(name)] = q.String()
	}
	return out
}

// sharingSignature is what a device config asks of the whole device: its
// sharing strategy and time slice. Shares of one device must agree on it,
// because the time slice is the GPU's, not a share's.
func sharingSignature(cfg apiv1beta1.DeviceConfig) string {
	strategy, ts, _ := sharingOf(cfg)
	if strategy == apiv1beta1.TimeSlicingStrategy {
		interval := apiv1beta1.DefaultTimeSlice
		if ts != nil && ts.Interval != nil {
			interval = *ts.Interval
		}
		return fmt.Sprintf("%s/%s", strategy, interval)
	}
	return string(strategy)
}

// checkShareSharing records in p what the share asks of the device and
// refuses it when that differs from another share prepared on the device, in
// another claim or in this one (NVIDIA refuses the same), or when it asks for
// MPS: an MPS server serves one claim, so NVIDIA refuses MPS with consumable
// shares, and so does this plugin.
func (s *nodeState) checkShareSharing(p *preparedDevice, claimUID string, pending []preparedDevice) error {
	strategy, _, _ := sharingOf(p.config)
	if strategy == apiv1beta1.MpsStrategy {
		return fmt.Errorf("device %s: sharing.strategy MPS cannot be combined with consumable shares (--consumable-shares %s): use TimeSlicing or no sharing config for a share", p.Name, s.cfg.Shares)
	}
	p.Data.ShareSharing = sharingSignature(p.config)
	for uid, cs := range s.ledger.Claims() {
		if uid == claimUID {
			continue
		}
		for _, dev := range cs.Devices {
			if dev.Device != p.Name || dev.ShareID == "" {
				continue
			}
			var data deviceData
			_ = json.Unmarshal(dev.Data, &data)
			if data.ShareSharing != p.Data.ShareSharing {
				return fmt.Errorf("device %s: the share's sharing config (%s) conflicts with share %s of claim %s (%s), which is prepared; shares of one device must ask for the same sharing", p.Name, signatureText(p.Data.ShareSharing), dev.ShareID, uid, signatureText(data.ShareSharing))
			}
		}
	}
	for _, other := range pending {
		if other.Name == p.Name && other.ShareID != "" && other.Data.ShareSharing != p.Data.ShareSharing {
			return fmt.Errorf("device %s: the share's sharing config (%s) conflicts with share %s of this claim (%s); shares of one device must ask for the same sharing", p.Name, signatureText(p.Data.ShareSharing), other.ShareID, signatureText(other.Data.ShareSharing))
		}
	}
	return nil
}

func signatureText(sig string) string {
	if sig == "" {
		return "none"
	}
	return sig
}

// sharedWithOthers is true when a claim other than uid holds a share of the
// device: the device's sharing settings stay until its last share goes.
func (s *nodeState) sharedWithOthers(uid string, dev checkpoint.PreparedDevice) bool {
	if dev.ShareID == "" {
		return false
	}
	for other, cs := range s.ledger.Claims() {
		if other == uid {
			continue
		}
		for _, d := range cs.Devices {
			if d.Pool == dev.Pool && d.Device == dev.Device && d.ShareID != "" {
				return true
			}
		}
	}
	return false
}
