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
	"errors"
	"fmt"
	"maps"
	"slices"

	"k8s.io/klog/v2"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// removeUnknownMigInstances destroys, on every partitionable GPU, the MIG
// instances that no recorded claim created (a crash between creating one and
// recording it), and re-reads the inventory if it destroyed any. It runs at
// start, before the state is shared.
func (s *nodeState) removeUnknownMigInstances(ctx context.Context) error {
	if !s.cfg.PartitionableMIG {
		return nil
	}
	keep := map[string]map[int]bool{}
	for parent, gis := range createdMigInstances(s.ledger.Claims()) {
		keep[parent] = map[int]bool{}
		for _, gi := range gis {
			keep[parent][gi] = true
		}
	}
	var errs []error
	changed := false
	for _, g := range s.inventory.GPUs {
		if !isPartitionable(g) {
			continue
		}
		parent, err := s.deviceByUUID(g.UUID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n, err := destroyUnknownMigInstances(s.nvml, parent, g.MigProfiles, keep[g.UUID])
		if err != nil {
			errs = append(errs, err)
		}
		if n > 0 {
			changed = true
			klog.FromContext(ctx).Info("Destroyed MIG instances no claim owns", "gpu", g.UUID, "count", n)
			s.crash.At("startup-mig-cleaned")
		}
	}
	if changed {
		inv, err := s.discover(ctx)
		if err != nil {
			return err
		}
		s.inventory = inv
	}
	return errors.Join(errs...)
}

// removeOrphanCDISpecs deletes CDI specs of claims the checkpoint does not
// know (for example after a reboot discarded the state). It runs at start,
// before the state is shared.
func (s *nodeState) removeOrphanCDISpecs(ctx context.Context) error {
	uids, err := s.cdi.ClaimUIDs()
	if err != nil {
		return err
	}
	claims := s.ledger.Claims()
	for _, uid := range uids {
		if _, ok := claims[uid]; ok {
			continue
		}
		klog.FromContext(ctx).Info("Removing CDI spec of an unknown claim", "claimUID", uid)
		if err := s.cdi.Delete(uid); err != nil {
			return err
		}
	}
	return nil
}

// reconcileMpsDaemons stops every MPS control daemon (and removes its
// directories) that no claim recorded as prepared holds: one a crash left
// between starting it and recording it, or one of a prepare the crash
// interrupted, which the prepare's retry starts again. A recorded daemon
// that runs is adopted as it is. A recorded one that does not (a restart of
// the plugin's container ends the daemons it started) is started again with
// its recorded settings, since the claim's running containers use it and
// the kubelet does not prepare their claim again; if that fails, the next
// prepare of the claim tries again (reviveMpsDaemon). It runs at start,
// before the state is shared.
func (s *nodeState) reconcileMpsDaemons(ctx context.Context) error {
	if s.mps == nil {
		return nil
	}
	logger := klog.FromContext(ctx)
	held := map[string]checkpoint.ClaimState{}
	for _, cs := range s.ledger.Claims() {
		if cs.Status != checkpoint.PrepareCompleted {
			continue
		}
		for id := range recordedMpsDaemons(cs) {
			held[id] = cs
		}
	}
	daemons, err := s.mps.Daemons()
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(held)) {
		if daemons[id].PID != 0 {
			logger.Info("Adopted the running MPS control daemon of a prepared claim", "daemon", id, "pid", daemons[id].PID)
			continue
		}
		if err := s.reviveMpsDaemon(ctx, held[id]); err != nil {
			logger.Error(err, "Restarting the MPS control daemon of a prepared claim failed; the claim's next prepare tries again", "daemon", id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(daemons)) {
		if _, ok := held[id]; ok {
			continue
		}
		if err := s.mps.Stop(ctx, daemons[id]); err != nil {
			errs = append(errs, err)
			continue
		}
		logger.Info("Stopped an MPS control daemon no prepared claim holds", "daemon", id, "pid", daemons[id].PID)
		s.crash.At("startup-mps-daemon-removed")
	}
	return errors.Join(errs...)
}

// resetUnheldSharing puts every full GPU that no recorded claim shares back to the defaults: the default
// compute mode where a GPU is in exclusive-process mode (MPS) and no claim set it, and the default time slice
// where no claim set one. Prepare records these changes before it makes them and unprepare undoes them, so
// this only finds a GPU that an earlier boot's plugin, whose checkpoint was discarded, or someone by hand left
// shared: the next tenant of the GPU would otherwise get one process at a time, or another's time slice. The
// time slice has no NVML getter, so it is set to the default on every such GPU; a failure to do so (no
// nvidia-smi, a GPU without time slices) is logged and does not stop the plugin.
func (s *nodeState) resetUnheldSharing(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	exclusive, timeSliced := map[string]bool{}, map[string]bool{}
	for _, cs := range s.ledger.Claims() {
		for _, dev := range cs.Devices {
			var data deviceData
			if json.Unmarshal(dev.Data, &data) != nil {
				continue
			}
			exclusive[data.UUID] = exclusive[data.UUID] || data.ExclusiveProcess
			timeSliced[data.UUID] = timeSliced[data.UUID] || data.TimeSliceSet
		}
	}
	var errs []error
	for _, g := range s.inventory.GPUs {
		if g.MIGEnabled || (exclusive[g.UUID] && timeSliced[g.UUID]) {
			continue
		}
		dev, err := s.deviceByUUID(g.UUID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !timeSliced[g.UUID] {
			if err := nvmlErr(s.nvml, "reset the time slice of a GPU no claim holds", dev.SetTimeSlice(nvml.TimeSliceDefault)); err != nil {
				logger.Error(err, "Could not reset the time slice of a GPU no claim holds; a tenant may inherit a time slice set outside the plugin", "gpu", g.UUID)
			}
		}
		if exclusive[g.UUID] {
			continue
		}
		mode, r := dev.GetComputeMode()
		if r != nvml.SUCCESS || mode != nvml.COMPUTEMODE_EXCLUSIVE_PROCESS {
			continue
		}
		if err := nvmlErr(s.nvml, "reset compute mode of a GPU no claim holds", dev.SetComputeMode(nvml.COMPUTEMODE_DEFAULT)); err != nil {
			errs = append(errs, fmt.Errorf("gpu %s: %w", g.UUID, err))
			continue
		}
		logger.Info("Reset the compute mode of a GPU no claim holds to default", "gpu", g.UUID)
	}
	return errors.Join(errs...)
}
