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
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
)

const (
	deviceTypeGpu = apiv1beta1.DeviceTypeGpu
	deviceTypeMig = apiv1beta1.DeviceTypeMig
)

// deviceData is what the checkpoint keeps per prepared device to undo it.
type deviceData struct {
	Type       string `json:"type"`
	UUID       string `json:"uuid,omitempty"`
	ParentUUID string `json:"parentUUID"`
	// GIID and CIID name the MIG instance (static or created).
	GIID int `json:"gi,omitempty"`
	CIID int `json:"ci,omitempty"`
	// CreatedMig is set when prepare created the instance (partitionable
	// mode) and unprepare must destroy it.
	CreatedMig bool `json:"createdMig,omitempty"`
	// TimeSliceSet and ExclusiveProcess are set when prepare changed the GPU's
	// time slice or compute mode and unprepare must reset them.
	TimeSliceSet     bool `json:"timeSliceSet,omitempty"`
	ExclusiveProcess bool `json:"exclusiveProcess,omitempty"`
	// Usage is what the usage ledger records of the device.
	Usage *usageFacts `json:"usage,omitempty"`
	// ShareSharing is, for one share of a device, the sharing the share's
	// config asks of the whole device (sharingSignature); every share
	// prepared on a device must ask the same.
	ShareSharing string `json:"shareSharing,omitempty"`
	// MpsDaemon is, on each MPS device of a claim, the claim's MPS control
	// daemon (mps_daemon.go): unprepare stops it.
	MpsDaemon *mpsDaemonRecord `json:"mpsDaemon,omitempty"`
	// Vfio is, on a vfio device, the PCI function prepare moves to vfio-pci
	// (vfio_passthrough.go): unprepare gives it back to nvidia.
	Vfio *vfioRecord `json:"vfio,omitempty"`
	// FabricPartition is, on each full-GPU and vfio device of a claim on a
	// Fabric Manager node, the claim's partition (fabric_partitions.go):
	// recorded before prepare activates it, deactivated by unprepare.
	FabricPartition *int `json:"fabricPartition,omitempty"`
}

// preparedDevice is a device being prepared.
type preparedDevice struct {
	Name     string
	Requests []string
	// AdminAccess devices are prepared for monitoring next to their owner:
	// no ownership, no NVML changes.
	AdminAccess bool
	ParentMinor int
	Data        deviceData
	SharingEnv  []string
	// ShareID and Consumed are set for one share of a device that allows
	// multiple allocations: the allocation result's shareID and
	// consumedCapacity.
	ShareID   string
	Consumed  map[string]string
	config    apiv1beta1.DeviceConfig
	partition *partitionRef
}

type partitionRef struct {
	profile   MigProfile
	placement MigPlacement
}

// Prepare prepares the claims under the state's lock, observes each in the
// metrics, and then brings the usage ledger and the devices gauge in step.
func (s *nodeState) Prepare(ctx context.Context, claims []*resourceapi.ResourceClaim) map[types.UID]kubeletplugin.PrepareResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		start := s.clock.Now()
		devices, err := s.prepareClaim(ctx, claim)
		s.metrics.observePrepare(s.clock.Since(start), err)
		out[claim.UID] = kubeletplugin.PrepareResult{Devices: devices, Err: err}
	}
	s.syncUsageLocked(ctx)
	s.updateDeviceMetricsLocked()
	return out
}

func (s *nodeState) prepareClaim(ctx context.Context, claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	logger := klog.FromContext(ctx).WithValues("claim", klog.KObj(claim), "claimUID", claim.UID)
	ctx = klog.NewContext(ctx, logger)
	uid := string(claim.UID)
	if prev, ok := s.ledger.Claims()[uid]; ok {
		if prev.Status == checkpoint.PrepareCompleted {
			logger.V(2).Info("Claim already prepared, returning the stored result")
			if err := s.reopenUsageLocked(uid, prev); err != nil {
				return nil, &prepareError{reason: reasonCheckpoint, err: err}
			}
			if err := s.reviveMpsDaemon(ctx, prev); err != nil {
				return nil, &prepareError{reason: reasonMPS, err: err}
			}
			return draplugin.PreparedDevices(prev), nil
		}
		// A crash interrupted an earlier prepare: undo what it may have done,
		// then prepare from scratch.
		logger.Info("Rolling back an interrupted prepare", "devices", len(prev.Devices))
		if err := s.undoClaim(ctx, uid, prev); err != nil {
			return nil, &prepareError{reason: reasonRollback, err: fmt.Errorf("roll back interrupted prepare of claim %s: %w", uid, err)}
		}
	}
	if claim.Status.Allocation == nil {
		return nil, &prepareError{reason: reasonInvalid, err: fmt.Errorf("claim %s is not allocated", uid)}
	}
	devices, err := s.planDevices(claim)
	if err != nil {
		return nil, err
	}
	if len(devices) == 0 {
		// Nothing of this driver in the claim.
		return []kubeletplugin.Device{}, nil
	}
	// Record the intent before any side effect.
	state := checkpoint.ClaimState{Namespace: claim.Namespace, Name: claim.Name, Status: checkpoint.PrepareStarted}
	for _, p := range devices {
		state.Devices = append(state.Devices, checkpointDevice(s.poolName(), p, nil))
	}
	if err := s.ledger.SaveClaim(uid, state); err != nil {
		return nil, &prepareError{reason: reasonCheckpoint, err: err}
	}
	s.crash.At("prepare-started")

	if err := s.applyDevices(ctx, uid, &state, devices); err != nil {
		logger.Error(err, "Prepare failed, rolling back")
		if rbErr := s.undoClaim(ctx, uid, state); rbErr != nil {
			logger.Error(rbErr, "Rollback failed; the claim stays recorded as started and is retried")
		}
		return nil, err
	}
	s.crash.At("devices-applied")
	if slices.ContainsFunc(devices, func(p preparedDevice) bool { return p.Data.Vfio != nil }) {
		// The GPUs left NVML: publish their vfio devices alone.
		if err := s.refreshInventory(ctx); err != nil {
			logger.Error(err, "Re-reading the node's devices after binding GPUs to vfio-pci failed")
		}
	}

	daemon, err := s.startMpsDaemon(ctx, uid, &state, devices)
	if err != nil {
		logger.Error(err, "Starting the MPS control daemon failed, rolling back")
		if rbErr := s.undoClaim(ctx, uid, state); rbErr != nil {
			logger.Error(rbErr, "Rollback failed; the claim stays recorded as started and is retried")
		}
		return nil, err
	}

	common, err := s.claimCommonEdits(devices)
	if err != nil {
		_ = s.undoClaim(ctx, uid, state)
		return nil, &prepareError{reason: reasonCDI, err: err}
	}
	spec := cdi.ClaimSpec{ClaimUID: uid, Common: common}
	if daemon != nil {
		mpsEdits := mpsEdits(*daemon)
		spec.Common.Env = append(spec.Common.Env, mpsEdits.Env...)
		spec.Common.Mounts = append(spec.Common.Mounts, mpsEdits.Mounts...)
	}
	edited := map[string]bool{}
	for _, p := range devices {
		if edited[p.Name] {
			continue // a second share of the device in this claim: one CDI device
		}
		edited[p.Name] = true
		dev, err := deviceEdits(s.hostDevices, p)
		if p.Data.Vfio != nil {
			dev, err = s.vfioEdits(p)
		}
		if err != nil {
			_ = s.undoClaim(ctx, uid, state)
			return nil, &prepareError{reason: reasonCDI, err: err}
		}
		spec.Devices = append(spec.Devices, dev)
	}
	ids, err := s.cdi.Write(spec)
	if err != nil {
		_ = s.undoClaim(ctx, uid, state)
		return nil, &prepareError{reason: reasonCDI, err: err}
	}
	s.crash.At("cdi-written")

	state.Status = checkpoint.PrepareCompleted
	state.PreparedAt = s.clock.Now()
	state.Devices = nil
	for _, p := range devices {
		state.Devices = append(state.Devices, checkpointDevice(s.poolName(), p, []string{ids[p.Name]}))
	}
	if err := s.ledger.SaveClaim(uid, state); err != nil {
		_ = s.undoClaim(ctx, uid, state)
		return nil, &prepareError{reason: reasonCheckpoint, err: err}
	}
	logger.V(2).Info("Prepared claim", "devices", len(devices))
	return draplugin.PreparedDevices(state), nil
}

func checkpointDevice(pool string, p preparedDevice, cdiIDs []string) checkpoint.PreparedDevice {
	data, _ := json.Marshal(p.Data)
	return checkpoint.PreparedDevice{
		Requests: p.Requests, Pool: pool, Device: p.Name, CDIDeviceIDs: cdiIDs, AdminAccess: p.AdminAccess,
		ShareID: p.ShareID, ConsumedCapacity: p.Consumed, Data: data,
	}
}

// planDevices checks the claim's allocation against the node and the
// checkpoint and resolves every device's config, before anything changes.
func (s *nodeState) planDevices(claim *resourceapi.ResourceClaim) ([]preparedDevice, error) {
	alloc := claim.Status.Allocation.Devices
	var devices []preparedDevice
	index := map[string]int{}
	for _, r := range alloc.Results {
		if r.Driver != s.cfg.DriverName {
			continue
		}
		if r.Pool != s.poolName() {
			return nil, &prepareError{reason: reasonInvalid, err: fmt.Errorf("device %s is in pool %q, this node's pool is %q", r.Device, r.Pool, s.poolName())}
		}
		key, shareID := r.Device, ""
		if r.ShareID != nil {
			shareID = string(*r.ShareID)
			key += "/" + shareID
		}
		if i, dup := index[key]; dup {
			// The same device for two requests of one claim (admin access):
			// one device, both requests.
			devices[i].Requests = append(devices[i].Requests, r.Request)
			continue
		}
		admin := r.AdminAccess != nil && *r.AdminAccess
		if shareID != "" && !s.cfg.Shares.Enabled() {
			return nil, &prepareError{reason: reasonInvalid, err: fmt.Errorf("device %s is allocated as share %s, but this node publishes no consumable shares (--consumable-shares disabled); the allocation was made from an earlier setting: delete the claim's pods so that it is allocated again", r.Device, shareID)}
		}
		if owner, taken := s.ledger.Checkpoint().DeviceOwner(r.Pool, r.Device, string(claim.UID), shareID != ""); taken && !admin {
			return nil, &prepareError{reason: reasonConflict, err: fmt.Errorf("device %s is already prepared for claim %s", r.Device, owner)}
		}
		p, err := s.planDevice(r.Device)
		if err != nil {
			return nil, &prepareError{reason: reasonInvalid, err: err}
		}
		p.AdminAccess = admin
		if p.Data.Vfio != nil && (admin || shareID != "") {
			return nil, &prepareError{reason: reasonInvalid, err: fmt.Errorf("device %s: a vfio device is handed to one VM: admin access and shares are not supported", r.Device)}
		}
		if other, ok := s.passthroughConflict(p, string(claim.UID), devices); ok && !admin {
			return nil, &prepareError{reason: reasonConflict, err: fmt.Errorf("device %s and %s are the same GPU, once for passthrough and once as a GPU or MIG device; a GPU is one or the other", r.Device, other)}
		}
		if admin && p.partition != nil {
			return nil, &prepareError{reason: reasonInvalid, err: fmt.Errorf("device %s: admin access to a partitionable MIG device is not supported (it only exists while its owner holds it)", r.Device)}
		}
		if shareID != "" && p.partition != nil {
			return nil, &prepareError{reason: reasonInvalid, err: fmt.Errorf("device %s is allocated as share %s, but partitionable MIG devices are published for one claim only", r.Device, shareID)}
		}
		p.ShareID, p.Consumed = shareID, consumedCapacity(r)
		if s.onPartitionableGPU(p) {
			// Two partitions of one GPU whose memory slices overlap cannot
			// both exist, nor a partition next to a claim (or share) of the
			// whole GPU.
			if other, ok := s.overlappingPartition(p, string(claim.UID), devices); ok {
				return nil, &prepareError{reason: reasonConflict, err: fmt.Errorf("device %s overlaps %s, which is prepared", r.Device, other)}
			}
		}
		p.Requests = []string{r.Request}
		cfg, err := draplugin.ResolveOpaqueConfig(s.cfg.DriverName, alloc.Config, r, p.Data.Type, defaultConfig)
		if err != nil {
			return nil, &prepareError{reason: reasonConfig, err: err}
		}
		if admin {
			// A monitor must not change how the owner shares the device.
			cfg, _ = apiv1beta1.DefaultConfig(p.Data.Type)
		}
		p.config = cfg
		if shareID != "" {
			if err := s.checkShareSharing(&p, string(claim.UID), devices); err != nil {
				return nil, &prepareError{reason: reasonConfig, err: err}
			}
		}
		s.planUsage(claim, r.Request, &p)
		index[key] = len(devices)
		devices = append(devices, p)
	}
	if err := s.planSharing(devices); err != nil {
		return nil, &prepareError{reason: reasonConfig, err: err}
	}
	if err := s.planFabricPartition(devices); err != nil {
		return nil, &prepareError{reason: reasonFabric, err: err}
	}
	return devices, nil
}

// planDevice maps a published device name to what prepare must do.
func (s *nodeState) planDevice(name string) (preparedDevice, error) {
	for _, g := range s.inventory.GPUs {
		partitionable := s.cfg.PartitionableMIG && isPartitionable(g)
		if gpuDeviceName(g.Minor) == name && (!g.MIGEnabled || partitionable) {
			return preparedDevice{Name: name, ParentMinor: g.Minor, Data: deviceData{Type: deviceTypeGpu, UUID: g.UUID, ParentUUID: g.UUID}}, nil
		}
		if partitionable {
			continue
		}
		for _, m := range g.MigDevices {
			if migDeviceName(g.Minor, m.Profile, m.GIProfileID, m.Placement.Start) == name {
				return preparedDevice{Name: name, ParentMinor: g.Minor, Data: deviceData{Type: deviceTypeMig, UUID: m.UUID, ParentUUID: g.UUID, GIID: m.GIID, CIID: m.CIID}}, nil
			}
		}
	}
	if s.cfg.passthrough() {
		if p, ok, err := s.planVfio(name); ok {
			return p, err
		}
	}
	if s.cfg.PartitionableMIG {
		if g, p, pl, ok := findPartition(s.inventory, name); ok {
			return preparedDevice{
				Name: name, ParentMinor: g.Minor,
				Data:      deviceData{Type: deviceTypeMig, ParentUUID: g.UUID, CreatedMig: true},
				partition: &partitionRef{profile: p, placement: pl},
			}, nil
		}
	}
	return preparedDevice{}, fmt.Errorf("device %s is not published by this node", name)
}

// onPartitionableGPU is true for a partition and for the full GPU of a
// partitionable GPU: the devices whose memory slices can overlap.
func (s *nodeState) onPartitionableGPU(p preparedDevice) bool {
	if p.partition != nil {
		return true
	}
	if !s.cfg.PartitionableMIG || p.Data.Type != deviceTypeGpu {
		return false
	}
	for _, g := range s.inventory.GPUs {
		if g.UUID == p.Data.UUID {
			return isPartitionable(g)
		}
	}
	return false
}

// overlappingPartition reports a prepared device on the same GPU whose memory
// slices intersect p's (the full GPU intersects everything). Holders of p's
// own device are DeviceOwner's to judge (shares of one device coexist).
func (s *nodeState) overlappingPartition(p preparedDevice, claimUID string, pending []preparedDevice) (string, bool) {
	span := func(name string) (string, int, int, bool) {
		for _, g := range s.inventory.GPUs {
			if gpuDeviceName(g.Minor) == name {
				return g.UUID, 0, g.MemorySlices(), true
			}
		}
		if g, _, pl, ok := findPartition(s.inventory, name); ok {
			return g.UUID, pl.Start, pl.Start + pl.Size, true
		}
		return "", 0, 0, false
	}
	pu, ps, pe, _ := span(p.Name)
	overlaps := func(name string) bool {
		if name == p.Name {
			return false
		}
		u, s, e, ok := span(name)
		return ok && u == pu && s < pe && ps < e
	}
	for uid, cs := range s.ledger.Claims() {
		if uid == claimUID {
			continue
		}
		for _, dev := range cs.Devices {
			if overlaps(dev.Device) && !dev.AdminAccess {
				return dev.Device, true
			}
		}
	}
	for _, other := range pending {
		if overlaps(other.Name) {
			return other.Name, true
		}
	}
	return "", false
}

// applyDevices creates MIG instances and applies sharing. Everything it
// changes is recorded in state (in memory at once, so an in-process rollback
// sees it) and saved once at the end: a crash before that save leaves MIG
// instances no claim records, which start-up destroys, and sharing settings,
// which the next prepare of the device overwrites.
func (s *nodeState) applyDevices(ctx context.Context, uid string, state *checkpoint.ClaimState, devices []preparedDevice) error {
	if err := s.activateFabricPartition(ctx, devices); err != nil {
		return err
	}
	for _, p := range devices {
		if p.Data.Vfio == nil {
			continue
		}
		if err := s.bindVfio(ctx, p); err != nil {
			return &prepareError{reason: reasonVfio, err: fmt.Errorf("bind device %s to vfio-pci: %w", p.Name, err)}
		}
	}
	changed := false
	for i := range devices {
		p := &devices[i]
		if p.partition == nil {
			continue
		}
		parent, err := s.deviceByUUID(p.Data.ParentUUID)
		if err != nil {
			return &prepareError{reason: reasonNVML, err: err}
		}
		inst, err := createMigInstance(s.nvml, parent, p.partition.profile, p.partition.placement)
		if err != nil {
			return &prepareError{reason: reasonNVML, err: fmt.Errorf("device %s: %w", p.Name, err)}
		}
		p.Data.GIID, p.Data.CIID, p.Data.UUID = inst.GIID, inst.CIID, inst.UUID
		state.Devices[i] = checkpointDevice(s.poolName(), *p, nil)
		changed = true
		s.crash.At("mig-created-unrecorded")
	}
	sharingErr := s.applySharing(ctx, devices)
	// Record what sharing changed even when it failed part-way, so the
	// rollback resets it.
	for i := range devices {
		if devices[i].Data.TimeSliceSet || devices[i].Data.ExclusiveProcess {
			changed = true
		}
		state.Devices[i] = checkpointDevice(s.poolName(), devices[i], nil)
	}
	if sharingErr != nil {
		return &prepareError{reason: reasonSharing, err: sharingErr}
	}
	if !changed {
		return nil
	}
	if err := s.ledger.SaveClaim(uid, *state); err != nil {
		return &prepareError{reason: reasonCheckpoint, err: err}
	}
	s.crash.At("mig-created")
	return nil
}
