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

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// UnprepareResourceClaims implements kubeletplugin.DRAPlugin. A claim that is
// not prepared is not an error (the kubelet may repeat the call).
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	d.state.mu.Lock()
	defer d.state.mu.Unlock()
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		start := d.clock.Now()
		err := d.unprepareClaim(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("claim", c.NamespacedName, "claimUID", c.UID)), string(c.UID))
		d.metrics.observeUnprepare(d.clock.Since(start), err)
		out[c.UID] = err
	}
	d.syncUsageLocked(ctx)
	d.updateDeviceMetricsLocked()
	return out, nil
}

func (d *Driver) unprepareClaim(ctx context.Context, uid string) error {
	cs, ok := d.state.ledger.Claims()[uid]
	if !ok {
		// Nothing recorded; a spec may still exist if a crash hit between
		// writing it and recording the claim.
		if err := d.cdi.Delete(uid); err != nil {
			return &prepareError{reason: reasonCDI, err: err}
		}
		return nil
	}
	if err := d.undoClaim(ctx, uid, cs); err != nil {
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
func (d *Driver) undoClaim(ctx context.Context, uid string, cs checkpoint.ClaimState) error {
	logger := klog.FromContext(ctx)
	d.endUsageLocked(ctx, uid, cs)
	var errs []error
	for _, dev := range cs.Devices {
		var data deviceData
		if len(dev.Data) > 0 {
			if err := json.Unmarshal(dev.Data, &data); err != nil {
				errs = append(errs, fmt.Errorf("device %s: stored data: %w", dev.Device, err))
				continue
			}
		}
		if err := d.undoSharing(data); err != nil && !lost(ctx, dev.Device, err) {
			errs = append(errs, fmt.Errorf("device %s: %w", dev.Device, err))
		}
		d.crash.At("unprepare-sharing-undone")
		if data.CreatedMig && data.UUID != "" {
			parent, err := d.deviceByUUID(data.ParentUUID)
			if err == nil {
				err = destroyMigInstance(d.nvml, parent, migInstance{GIID: data.GIID, CIID: data.CIID})
			}
			if err != nil && !lost(ctx, dev.Device, err) {
				errs = append(errs, fmt.Errorf("device %s: %w", dev.Device, err))
				continue
			}
			logger.V(2).Info("Destroyed MIG instance", "device", dev.Device, "gi", data.GIID, "ci", data.CIID)
			d.crash.At("unprepare-mig-destroyed")
		}
	}
	if err := d.cdi.Delete(uid); err != nil {
		errs = append(errs, err)
	}
	d.crash.At("unprepare-cdi-deleted")
	if len(errs) > 0 {
		return &prepareError{reason: reasonNVML, err: errors.Join(errs...)}
	}
	if err := d.state.ledger.DeleteClaim(uid); err != nil {
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
