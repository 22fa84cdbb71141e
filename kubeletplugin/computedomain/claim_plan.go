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
	"encoding/json"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
)

type checkpointDevice = checkpoint.PreparedDevice

// deviceData is what the checkpoint keeps per prepared device: enough to
// undo the prepare without the domain.
type deviceData struct {
	// Kind is channel or daemon.
	Kind      string    `json:"kind"`
	DomainUID types.UID `json:"domainUID"`
	// Channels are the IMEX channels injected (workload claims).
	Channels []int `json:"channels,omitempty"`
}

// claimPlan is a checked allocation: which slots, which kind, which domain.
type claimPlan struct {
	kind      string
	domainUID types.UID
	mode      apiv1beta1.ComputeDomainAllocationMode
	results   []resourceapi.DeviceRequestAllocationResult
}

// planClaim checks the claim's allocation for this driver: every device is a
// slot of this node, all of one kind, configured for one domain, and held by
// no other claim.
func (s *nodeState) planClaim(claim *resourceapi.ResourceClaim) (claimPlan, error) {
	var plan claimPlan
	if claim.Status.Allocation == nil {
		return plan, fmt.Errorf("%w: claim %s is not allocated", ErrRefused, claim.UID)
	}
	alloc := claim.Status.Allocation.Devices
	for _, r := range alloc.Results {
		if r.Driver != s.cfg.DriverName {
			continue
		}
		if r.Pool != s.cfg.NodeName {
			return plan, fmt.Errorf("%w: device %s is in pool %q, this node's pool is %q", ErrRefused, r.Device, r.Pool, s.cfg.NodeName)
		}
		kind, err := deviceKind(r.Device, s.cfg.ChannelSlots, s.cfg.DaemonSlots)
		if err != nil {
			return plan, fmt.Errorf("%w: %w", ErrRefused, err)
		}
		cfg, err := draplugin.ResolveOpaqueConfig(s.cfg.DriverName, alloc.Config, r, kind, configRequired)
		if err != nil {
			return plan, fmt.Errorf("%w: %w", ErrRefused, err)
		}
		var uid types.UID
		mode := apiv1beta1.ComputeDomainAllocationMode("")
		switch c := cfg.(type) {
		case *apiv1beta1.ComputeDomainChannelConfig:
			uid, mode = types.UID(c.DomainID), c.AllocationMode
		case *apiv1beta1.ComputeDomainDaemonConfig:
			uid = types.UID(c.DomainID)
		}
		if plan.kind == "" {
			plan.kind, plan.domainUID, plan.mode = kind, uid, mode
		} else if plan.kind != kind || plan.domainUID != uid || plan.mode != mode {
			return plan, fmt.Errorf("%w: claim mixes %s devices of domain %s (%s) with %s devices of domain %s (%s); one claim serves one domain and one purpose",
				ErrRefused, plan.kind, plan.domainUID, plan.mode, kind, uid, mode)
		}
		if owner, held := s.ledger.Checkpoint().DeviceOwner(r.Pool, r.Device, string(claim.UID), false); held {
			return plan, fmt.Errorf("%w: device %s is already prepared for claim %s", ErrRefused, r.Device, owner)
		}
		plan.results = append(plan.results, r)
	}
	if len(plan.results) == 0 {
		return plan, fmt.Errorf("%w: claim %s has no device of driver %s", ErrRefused, claim.UID, s.cfg.DriverName)
	}
	return plan, nil
}

// checkpointDevices records the plan's slots with their data.
func (s *nodeState) checkpointDevices(plan claimPlan, data deviceData, cdiIDs []string) []checkpointDevice {
	raw, _ := json.Marshal(data)
	out := make([]checkpointDevice, 0, len(plan.results))
	for _, r := range plan.results {
		out = append(out, checkpointDevice{Requests: []string{r.Request}, Pool: r.Pool, Device: r.Device, CDIDeviceIDs: cdiIDs, Data: raw})
	}
	return out
}

// claimData decodes the data of a checkpointed claim's first device.
func claimData(devs []checkpointDevice) (deviceData, bool) {
	if len(devs) == 0 {
		return deviceData{}, false
	}
	var data deviceData
	if err := json.Unmarshal(devs[0].Data, &data); err != nil {
		return deviceData{}, false
	}
	return data, true
}
