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
	"sync"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
)

// nodeState is what the plugin knows of its node, under one lock: the devices
// it discovered and the claims its checkpoint records. Prepare, unprepare and
// the stale-claim cleanup hold the lock for their whole run, so they see and
// change both together.
type nodeState struct {
	mu        sync.Mutex
	ledger    *checkpoint.Ledger
	inventory Inventory
}

// snapshot returns the inventory and the recorded claims as they are now.
// Both are safe to read after the lock is released: the claims map is
// copy-on-write and the inventory is replaced, never changed in place, apart
// from its clique, a string copied with it.
func (s *nodeState) snapshot() (Inventory, map[string]checkpoint.ClaimState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inventory, s.ledger.Claims()
}

// gpuUUIDs lists the GPUs of the inventory.
func (s *nodeState) gpuUUIDs() []string {
	inv, _ := s.snapshot()
	uuids := make([]string, 0, len(inv.GPUs))
	for _, g := range inv.GPUs {
		uuids = append(uuids, g.UUID)
	}
	return uuids
}

// createdMigInstances maps every MIG instance a recorded claim created to
// the claim's device name: GPU UUID → device name → GPU instance ID.
func createdMigInstances(claims map[string]checkpoint.ClaimState) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, cs := range claims {
		for _, dev := range cs.Devices {
			var data deviceData
			if json.Unmarshal(dev.Data, &data) != nil || !data.CreatedMig || data.UUID == "" {
				continue
			}
			if out[data.ParentUUID] == nil {
				out[data.ParentUUID] = map[string]int{}
			}
			out[data.ParentUUID][dev.Device] = data.GIID
		}
	}
	return out
}

// preparedDeviceNames is the set of devices some recorded claim holds.
func preparedDeviceNames(claims map[string]checkpoint.ClaimState) map[string]bool {
	out := map[string]bool{}
	for _, cs := range claims {
		for _, dev := range cs.Devices {
			out[dev.Device] = true
		}
	}
	return out
}
