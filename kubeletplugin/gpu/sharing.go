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
	"fmt"
	"slices"
	"strings"

	"k8s.io/klog/v2"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// sharingOf returns the device's strategy, time slice (full GPUs only) and MPS
// settings from its resolved config.
func sharingOf(cfg apiv1beta1.DeviceConfig) (apiv1beta1.SharingStrategy, *apiv1beta1.TimeSlicingConfig, *apiv1beta1.MpsConfig) {
	switch c := cfg.(type) {
	case *apiv1beta1.GpuConfig:
		if c.Sharing != nil {
			return c.Sharing.Strategy, c.Sharing.TimeSlicingConfig, c.Sharing.MpsConfig
		}
	case *apiv1beta1.MigDeviceConfig:
		if c.Sharing != nil {
			return c.Sharing.Strategy, nil, c.Sharing.MpsConfig
		}
	}
	return "", nil, nil
}

// claimUUIDs lists the claim's device UUIDs in allocation order; a partition
// not created yet gets a placeholder (per-device MPS limits for it can only be
// keyed by index).
func claimUUIDs(devices []preparedDevice) []string {
	uuids := make([]string, len(devices))
	for i, p := range devices {
		uuids[i] = p.Data.UUID
		if uuids[i] == "" {
			uuids[i] = fmt.Sprintf("%spending-%d", apiv1beta1.MigUUIDPrefix, i)
		}
	}
	return uuids
}

// planSharing checks the MPS per-device limits against the claim's devices
// before anything changes, and marks in each full GPU's data the NVML
// settings prepare will change (time slice, exclusive-process compute mode).
// The marks reach the checkpoint with the claim's PrepareStarted record,
// before the first NVML call: a plugin killed between the change and the
// next checkpoint write still knows to reset the GPU (on unprepare, or the
// rollback of a retried prepare), so the next tenant never inherits it.
// Resetting a setting that was not changed yet is harmless.
func (s *nodeState) planSharing(devices []preparedDevice) error {
	uuids := claimUUIDs(devices)
	for i := range devices {
		p := &devices[i]
		strategy, _, mps := sharingOf(p.config)
		if err := s.checkSharingGate(strategy); err != nil {
			return fmt.Errorf("device %s: %w", p.Name, err)
		}
		switch {
		case strategy == apiv1beta1.TimeSlicingStrategy && p.Data.Type == deviceTypeGpu:
			p.Data.TimeSliceSet = true
		case strategy == apiv1beta1.MpsStrategy:
			if _, err := mps.PinnedMemoryLimits(uuids); err != nil {
				return fmt.Errorf("device %s: %w", p.Name, err)
			}
			if p.Data.Type == deviceTypeGpu {
				p.Data.ExclusiveProcess = true
			}
		}
	}
	// One MPS control daemon serves the claim's MPS devices.
	_, _, err := mpsDaemonSettings(devices)
	return err
}

// mpsEnv is the environment a CUDA client of an MPS-shared device reads.
func mpsEnv(mps *apiv1beta1.MpsConfig, uuids []string) ([]string, error) {
	if mps == nil {
		return nil, nil
	}
	var env []string
	if mps.DefaultActiveThreadPercentage != nil {
		env = append(env, fmt.Sprintf("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d", *mps.DefaultActiveThreadPercentage))
	}
	limits, err := mps.PinnedMemoryLimits(uuids)
	if err != nil {
		return nil, err
	}
	var parts []string
	for _, uuid := range uuids {
		if q, ok := limits[uuid]; ok {
			parts = append(parts, fmt.Sprintf("%s=%dM", uuid, q.Value()/(1024*1024)))
		}
	}
	if len(parts) > 0 {
		env = append(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT="+strings.Join(parts, ","))
	}
	return env, nil
}

// applySharing sets the time slice (TimeSlicing on a full GPU) or the
// exclusive-process compute mode (MPS on a full GPU) through NVML and the MPS
// client limits through CDI environment variables. planSharing has already
// marked the NVML changes in the device's data, so unprepare can reset them.
func (s *nodeState) applySharing(ctx context.Context, devices []preparedDevice) error {
	logger := klog.FromContext(ctx)
	uuids := claimUUIDs(devices)
	for i := range devices {
		p := &devices[i]
		strategy, ts, mps := sharingOf(p.config)
		switch strategy {
		case apiv1beta1.TimeSlicingStrategy:
			if p.Data.Type != deviceTypeGpu {
				continue // MIG devices have no time slice of their own
			}
			interval := apiv1beta1.DefaultTimeSlice
			if ts != nil && ts.Interval != nil {
				interval = *ts.Interval
			}
			n, err := interval.Int()
			if err != nil {
				return fmt.Errorf("device %s: %w", p.Name, err)
			}
			dev, err := s.deviceByUUID(p.Data.UUID)
			if err != nil {
				return err
			}
			if err := nvmlErr(s.nvml, fmt.Sprintf("device %s: set time slice %s", p.Name, interval), dev.SetTimeSlice(nvml.TimeSlice(n))); err != nil {
				return err
			}
			s.crash.At("sharing-applied")
			logger.V(2).Info("Set time slice", "device", p.Name, "interval", interval)
		case apiv1beta1.MpsStrategy:
			if p.Data.Type == deviceTypeGpu {
				dev, err := s.deviceByUUID(p.Data.UUID)
				if err != nil {
					return err
				}
				if err := nvmlErr(s.nvml, fmt.Sprintf("device %s: set compute mode exclusive-process", p.Name), dev.SetComputeMode(nvml.COMPUTEMODE_EXCLUSIVE_PROCESS)); err != nil {
					return err
				}
				s.crash.At("sharing-applied")
			}
			env, err := mpsEnv(mps, uuids)
			if err != nil {
				return fmt.Errorf("device %s: %w", p.Name, err)
			}
			p.SharingEnv = slices.Concat(p.SharingEnv, env)
			logger.V(2).Info("Configured MPS sharing", "device", p.Name)
		}
	}
	return nil
}

// undoSharing resets what applySharing changed on a device.
func (s *nodeState) undoSharing(data deviceData) error {
	if !data.TimeSliceSet && !data.ExclusiveProcess {
		return nil
	}
	dev, err := s.deviceByUUID(data.UUID)
	if err != nil {
		return err
	}
	if data.TimeSliceSet {
		if err := nvmlErr(s.nvml, "reset time slice", dev.SetTimeSlice(nvml.TimeSliceDefault)); err != nil {
			return err
		}
	}
	if data.ExclusiveProcess {
		if err := nvmlErr(s.nvml, "reset compute mode", dev.SetComputeMode(nvml.COMPUTEMODE_DEFAULT)); err != nil {
			return err
		}
	}
	return nil
}
