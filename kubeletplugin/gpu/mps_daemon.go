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
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/klog/v2"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/mps"
)

// Where the claim's containers find the MPS control daemon's directories:
// nvidia-cuda-mps-control's defaults, so a client needs no setting of its
// own; the variables are set all the same, as NVIDIA's driver does.
const (
	mpsPipeContainerDir = "/tmp/nvidia-mps"
	mpsLogContainerDir  = "/var/log/nvidia-mps"
	mpsShmContainerDir  = "/dev/shm"
)

// mpsDaemonRecord is what the checkpoint keeps, on each MPS device of a
// claim, of the claim's MPS control daemon: its ID (the claim UID, which
// names its directory) and what it was started with, so a daemon found dead
// is started again the same way.
type mpsDaemonRecord struct {
	ID       string       `json:"id"`
	Settings mps.Settings `json:"settings"`
}

// servedByMpsDaemon is true for a device the claim's MPS control daemon
// serves: sharing strategy MPS, and not a monitor's (admin access).
func servedByMpsDaemon(p preparedDevice) bool {
	strategy, _, _ := sharingOf(p.config)
	return strategy == apiv1beta1.MpsStrategy && !p.AdminAccess
}

// mpsDaemonSettings is what the claim's one MPS control daemon is started
// with: the UUIDs of its MPS devices, the thread percentage and multi-user
// mode they agree on, and each device's pinned memory limit in MiB. ok is
// false when the claim has no MPS device. planSharing calls it before
// anything changes, to refuse devices that disagree; prepare again once
// every device has its UUID (a partition gets it when created).
func mpsDaemonSettings(devices []preparedDevice) (s mps.Settings, ok bool, err error) {
	uuids := claimUUIDs(devices)
	var first *preparedDevice
	for i := range devices {
		p := &devices[i]
		if !servedByMpsDaemon(*p) {
			continue
		}
		_, _, cfg := sharingOf(p.config)
		if cfg == nil {
			cfg = &apiv1beta1.MpsConfig{}
		}
		multiUser := cfg.MultiUser != nil && *cfg.MultiUser
		if first == nil {
			first, s.ActiveThreadPercentage, s.MultiUser = p, cfg.DefaultActiveThreadPercentage, multiUser
		} else {
			if !equalPtr(s.ActiveThreadPercentage, cfg.DefaultActiveThreadPercentage) {
				return mps.Settings{}, false, fmt.Errorf("devices %s and %s ask for different sharing.mpsConfig.defaultActiveThreadPercentage (%s and %s): one MPS control daemon serves the claim, so its MPS devices must ask for the same (or leave it unset)",
					first.Name, p.Name, intOrUnset(s.ActiveThreadPercentage), intOrUnset(cfg.DefaultActiveThreadPercentage))
			}
			if s.MultiUser != multiUser {
				return mps.Settings{}, false, fmt.Errorf("devices %s and %s ask for different sharing.mpsConfig.multiUser (%t and %t): one MPS control daemon serves the claim, so its MPS devices must ask for the same",
					first.Name, p.Name, s.MultiUser, multiUser)
			}
		}
		uuid := uuids[i]
		s.Devices = append(s.Devices, uuid)
		limits, err := cfg.PinnedMemoryLimits(uuids)
		if err != nil {
			return mps.Settings{}, false, fmt.Errorf("device %s: %w", p.Name, err)
		}
		if q, ok := limits[uuid]; ok {
			if s.PinnedMemoryLimits == nil {
				s.PinnedMemoryLimits = map[string]int64{}
			}
			s.PinnedMemoryLimits[uuid] = q.Value() / (1024 * 1024)
		}
	}
	return s, first != nil, nil
}

func equalPtr(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func intOrUnset(p *int) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// mpsDaemonEnv is the daemon's environment beyond package mps's: the
// directories of the driver's libraries, which the MPS server it spawns
// loads (libcuda).
func (s *nodeState) mpsDaemonEnv() []string {
	root := s.cfg.DriverRoot
	if root == "" {
		root = s.cfg.HostRoot
	}
	var dirs []string
	for _, l := range s.driverFiles.Libraries {
		if dir := filepath.Join(root, path.Dir(l.Path)); !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	if len(dirs) == 0 {
		return nil
	}
	return []string{"LD_LIBRARY_PATH=" + strings.Join(dirs, ":")}
}

// startMpsDaemon starts the claim's MPS control daemon, if the claim has MPS
// devices, and records it on each of them in the checkpoint. A crash between
// the start and the record leaves a daemon no claim records as prepared,
// which the next start-up stops (reconcileMpsDaemons).
func (s *nodeState) startMpsDaemon(ctx context.Context, uid string, state *checkpoint.ClaimState, devices []preparedDevice) (*mps.Daemon, error) {
	settings, ok, err := mpsDaemonSettings(devices)
	if err != nil {
		return nil, &prepareError{reason: reasonConfig, err: err}
	}
	if !ok {
		return nil, nil
	}
	if s.mps == nil {
		return nil, &prepareError{reason: reasonMPS, err: fmt.Errorf("the claim shares devices with MPS, but this plugin runs no MPS control daemon (no --mps-control-binary)")}
	}
	settings.Env = s.mpsDaemonEnv()
	d, err := s.mps.Start(ctx, uid, settings)
	if err != nil {
		return nil, &prepareError{reason: reasonMPS, err: err}
	}
	rec := &mpsDaemonRecord{ID: d.ID, Settings: settings}
	for i := range devices {
		if servedByMpsDaemon(devices[i]) {
			devices[i].Data.MpsDaemon = rec
			state.Devices[i] = checkpointDevice(s.poolName(), devices[i], nil)
		}
	}
	s.crash.At("mps-daemon-started-unrecorded")
	if err := s.ledger.SaveClaim(uid, *state); err != nil {
		return nil, &prepareError{reason: reasonCheckpoint, err: err}
	}
	s.crash.At("mps-daemon-recorded")
	klog.FromContext(ctx).V(2).Info("Started the claim's MPS control daemon", "daemon", d.ID, "pid", d.PID, "devices", settings.Devices, "multiUser", settings.MultiUser)
	return &d, nil
}

// recordedMpsDaemons are the MPS control daemons the claim's devices record,
// by ID (one at most: one daemon per claim).
func recordedMpsDaemons(cs checkpoint.ClaimState) map[string]mpsDaemonRecord {
	out := map[string]mpsDaemonRecord{}
	for _, dev := range cs.Devices {
		var data deviceData
		if json.Unmarshal(dev.Data, &data) == nil && data.MpsDaemon != nil {
			out[data.MpsDaemon.ID] = *data.MpsDaemon
		}
	}
	return out
}

// stopMpsDaemons quits the claim's recorded MPS control daemon and removes
// its directories. A daemon that no longer runs only loses its directories.
// The claim is forgotten later: a crash between leaves it recorded as
// prepared, and the start-up gives it its daemon again until the retried
// unprepare stops it.
func (s *nodeState) stopMpsDaemons(ctx context.Context, cs checkpoint.ClaimState) error {
	recs := recordedMpsDaemons(cs)
	if len(recs) == 0 {
		return nil
	}
	if s.mps == nil {
		return fmt.Errorf("the claim records MPS control daemon %s, but this plugin runs no MPS control daemon (no --mps-control-binary)", strings.Join(slices.Sorted(maps.Keys(recs)), ", "))
	}
	for _, id := range slices.Sorted(maps.Keys(recs)) {
		if err := s.mps.Stop(ctx, mps.Daemon{ID: id}); err != nil {
			return err
		}
		klog.FromContext(ctx).V(2).Info("Stopped the claim's MPS control daemon", "daemon", id)
	}
	s.crash.At("unprepare-mps-daemon-stopped")
	return nil
}

// reviveMpsDaemon starts again, the way it was started, the recorded MPS
// control daemon of a prepared claim that no longer runs (it was killed, or
// it ended with the plugin's container), so the claim's containers find
// their daemon at the pipe directory their CDI spec mounts. It runs at
// start-up and when the kubelet prepares the claim again.
func (s *nodeState) reviveMpsDaemon(ctx context.Context, cs checkpoint.ClaimState) error {
	recs := recordedMpsDaemons(cs)
	if len(recs) == 0 || s.mps == nil {
		return nil
	}
	running, err := s.mps.Daemons()
	if err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(recs)) {
		if running[id].PID != 0 {
			continue
		}
		settings := recs[id].Settings
		settings.Env = s.mpsDaemonEnv()
		d, err := s.mps.Start(ctx, id, settings)
		if err != nil {
			return err
		}
		klog.FromContext(ctx).Info("Restarted the prepared claim's MPS control daemon, which was not running", "daemon", id, "pid", d.PID)
	}
	return nil
}

// mpsEdits are the container edits of a claim with an MPS control daemon:
// its pipe and log directories and its shared memory directory mounted where
// MPS clients look for them, and the two variables naming them.
func mpsEdits(d mps.Daemon) cdispec.ContainerEdits {
	mount := func(hostPath, containerPath string) *cdispec.Mount {
		return &cdispec.Mount{HostPath: hostPath, ContainerPath: containerPath, Type: "bind", Options: []string{"rw", "nosuid", "nodev", "rbind", "rprivate"}}
	}
	return cdispec.ContainerEdits{
		Env: []string{mps.EnvPipeDirectory + "=" + mpsPipeContainerDir, mps.EnvLogDirectory + "=" + mpsLogContainerDir},
		Mounts: []*cdispec.Mount{
			mount(d.PipeDir(), mpsPipeContainerDir),
			mount(d.LogDir(), mpsLogContainerDir),
			mount(d.ShmDir(), mpsShmContainerDir),
		},
	}
}
