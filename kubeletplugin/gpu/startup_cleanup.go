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
	"errors"

	"k8s.io/klog/v2"
)

// removeUnknownMigInstances destroys, on every partitionable GPU, the MIG
// instances that no recorded claim created (a crash between creating one and
// recording it), and re-reads the inventory if it destroyed any. It runs at
// start, before the driver is shared.
func (d *Driver) removeUnknownMigInstances(ctx context.Context) error {
	if !d.cfg.PartitionableMIG {
		return nil
	}
	keep := map[string]map[int]bool{}
	for parent, gis := range createdMigInstances(d.state.ledger.Claims()) {
		keep[parent] = map[int]bool{}
		for _, gi := range gis {
			keep[parent][gi] = true
		}
	}
	var errs []error
	changed := false
	for _, g := range d.state.inventory.GPUs {
		if !isPartitionable(g) {
			continue
		}
		parent, err := d.deviceByUUID(g.UUID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n, err := destroyUnknownMigInstances(d.nvml, parent, g.MigProfiles, keep[g.UUID])
		if err != nil {
			errs = append(errs, err)
		}
		if n > 0 {
			changed = true
			klog.FromContext(ctx).Info("Destroyed MIG instances no claim owns", "gpu", g.UUID, "count", n)
		}
	}
	if changed {
		inv, err := DiscoverInventory(ctx, d.nvml, d.cfg.HostRoot)
		if err != nil {
			return err
		}
		d.state.inventory = inv
	}
	return errors.Join(errs...)
}

// removeOrphanCDISpecs deletes CDI specs of claims the checkpoint does not
// know (for example after a reboot discarded the state). It runs at start,
// before the driver is shared.
func (d *Driver) removeOrphanCDISpecs(ctx context.Context) error {
	uids, err := d.cdi.ClaimUIDs()
	if err != nil {
		return err
	}
	claims := d.state.ledger.Claims()
	for _, uid := range uids {
		if _, ok := claims[uid]; ok {
			continue
		}
		klog.FromContext(ctx).Info("Removing CDI spec of an unknown claim", "claimUID", uid)
		if err := d.cdi.Delete(uid); err != nil {
			return err
		}
	}
	return nil
}
