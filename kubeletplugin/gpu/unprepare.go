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
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// Unprepare unprepares the claims under the state's lock, observes each in
// the metrics, and then brings the usage ledger and the devices gauge in step.
// A claim that is not prepared is not an error (the kubelet may repeat the
// call).
func (s *nodeState) Unprepare(ctx context.Context, claims []kubeletplugin.NamespacedObject) map[types.UID]error {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		start := s.clock.Now()
		err := s.unprepareClaim(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("claim", c.NamespacedName, "claimUID", c.UID)), string(c.UID))
		s.metrics.observeUnprepare(s.clock.Since(start), err)
		out[c.UID] = err
	}
	s.syncUsageLocked(ctx)
	s.updateDeviceMetricsLocked()
	return out
}

func (s *nodeState) unprepareClaim(ctx context.Context, uid string) error {
	cs, ok := s.ledger.Claims()[uid]
	if !ok {
		// Nothing recorded; a spec may still exist if a crash hit between
		// writing it and recording the claim.
		if err := s.cdi.Delete(uid); err != nil {
			return &prepareError{reason: reasonCDI, err: err}
		}
		return nil
	}
	if err := s.undoClaim(ctx, uid, cs); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Unprepared claim", "devices", len(cs.Devices))
	return nil
}

// undoClaim reverts every side effect recorded for the claim (sharing
// settings, created MIG instances, CDI spec) and then forgets it. On error the
// claim stays recorded, so a retry does the rest. A GPU that fell off the bus
// took its settings and instances with it: that is not an error, or the pod
// holding it could never terminate.
func (s *nodeState) undoClaim(ctx context.Context, uid string, cs checkpoint.ClaimState) error {
	logger := klog.FromContext(ctx)
	s.endUsageLocked(ctx, uid, cs)
	var errs []error
	if err := s.stopMpsDaemons(ctx, cs); err != nil {
		errs = append(errs, err)
	}
	for _, dev := range cs.Devices {
		data, err := decodeDeviceData(dev)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if data.Vfio != nil {
			if err := s.returnToNvidia(ctx, dev.Device, *data.Vfio); err != nil {
				errs = append(errs, fmt.Errorf("device %s: return to the nvidia driver: %w", dev.Device, err))
			}
			continue
		}
		if s.sharedWithOthers(uid, dev) {
			// Another claim's share of the device needs its settings (they
			// agree: checkShareSharing); its unprepare resets them.
			logger.V(2).Info("Device still shared by another claim, its sharing settings stay", "device", dev.Device)
		} else if err := s.undoSharing(data); err != nil && !lost(ctx, dev.Device, err) {
			errs = append(errs, fmt.Errorf("device %s: %w", dev.Device, err))
		}
		s.crash.At("unprepare-sharing-undone")
		if data.CreatedMig && data.UUID != "" {
			parent, err := s.deviceByUUID(data.ParentUUID)
			if err == nil {
				err = destroyMigInstance(s.nvml, parent, migInstance{GIID: data.GIID, CIID: data.CIID})
			}
			if err != nil && !lost(ctx, dev.Device, err) {
				errs = append(errs, fmt.Errorf("device %s: %w", dev.Device, err))
				continue
			}
			logger.V(2).Info("Destroyed MIG instance", "device", dev.Device, "gi", data.GIID, "ci", data.CIID)
			s.crash.At("unprepare-mig-destroyed")
		}
	}
	if len(errs) == 0 {
		// The GPUs are back on nvidia (or never left it): the partition can go.
		if err := s.deactivateFabricPartition(ctx, uid, cs); err != nil {
			errs = append(errs, err)
		}
	}
	if hasVfio(cs) {
		if err := s.refreshInventory(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := s.cdi.Delete(uid); err != nil {
		errs = append(errs, err)
	}
	s.crash.At("unprepare-cdi-deleted")
	if len(errs) > 0 {
		return &prepareError{reason: reasonNVML, err: errors.Join(errs...)}
	}
	if err := s.ledger.DeleteClaim(uid); err != nil {
		return &prepareError{reason: reasonCheckpoint, err: err}
	}
	return nil
}

// lost reports (and logs) an error caused by a lost GPU.
func lost(ctx context.Context, device string, err error) bool {
	if !errors.Is(err, nvml.ErrGPULost) {
		return false
	}
	klog.FromContext(ctx).Info("GPU is lost, nothing to undo on it", "device", device, "err", err.Error())
	return true
}
