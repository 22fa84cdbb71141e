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

package testdriver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// Device is a published device and the CDI edits a container gets with it.
type Device struct {
	API   resourceapi.Device
	Edits cdispec.ContainerEdits
}

// Config of one node's driver instance.
type Config struct {
	DriverName string
	NodeName   string
	Client     kubernetes.Interface
	// RegistrarDir, PluginDir and CDIDir are inside the node's host root.
	RegistrarDir string
	PluginDir    string
	CDIDir       string
	Devices      []Device
}

// CheckpointFile is the name of the prepared-claims file in PluginDir.
const CheckpointFile = "checkpoint.json"

// Driver implements kubeletplugin.DRAPlugin.
type Driver struct {
	cfg     Config
	devices map[string]Device
	helper  *kubeletplugin.Helper

	mu       sync.Mutex
	prepared map[types.UID][]kubeletplugin.Device
}

var _ kubeletplugin.DRAPlugin = &Driver{}

// Run starts the plugin (registration and DRA sockets), publishes the
// devices and serves until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	d := &Driver{cfg: cfg, devices: map[string]Device{}, prepared: map[types.UID][]kubeletplugin.Device{}}
	for _, dev := range cfg.Devices {
		d.devices[dev.API.Name] = dev
	}
	for _, dir := range []string{cfg.RegistrarDir, cfg.PluginDir, cfg.CDIDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	if err := d.loadCheckpoint(); err != nil {
		return err
	}
	helper, err := kubeletplugin.Start(ctx, d,
		kubeletplugin.DriverName(cfg.DriverName),
		kubeletplugin.NodeName(cfg.NodeName),
		kubeletplugin.KubeClient(cfg.Client),
		kubeletplugin.RegistrarDirectoryPath(cfg.RegistrarDir),
		kubeletplugin.PluginDataDirectoryPath(cfg.PluginDir),
		kubeletplugin.CDIDirectory(cfg.CDIDir),
	)
	if err != nil {
		return fmt.Errorf("start kubelet plugin %s on %s: %w", cfg.DriverName, cfg.NodeName, err)
	}
	d.helper = helper
	defer helper.Stop()

	devices := make([]resourceapi.Device, 0, len(cfg.Devices))
	for _, dev := range cfg.Devices {
		devices = append(devices, dev.API)
	}
	if err := helper.PublishResources(ctx, resourceslice.DriverResources{
		Pools: map[string]resourceslice.Pool{cfg.NodeName: {Slices: []resourceslice.Slice{{Devices: devices}}}},
	}); err != nil {
		return fmt.Errorf("publish devices of %s: %w", cfg.NodeName, err)
	}
	<-ctx.Done()
	return nil
}

// PrepareResourceClaims writes a CDI spec for each claim's devices of this
// driver and records the claim in the checkpoint.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	result := map[types.UID]kubeletplugin.PrepareResult{}
	for _, claim := range claims {
		if done, ok := d.prepared[claim.UID]; ok {
			result[claim.UID] = kubeletplugin.PrepareResult{Devices: done}
			continue
		}
		devices, err := d.prepareClaim(claim)
		if err != nil {
			result[claim.UID] = kubeletplugin.PrepareResult{Err: fmt.Errorf("prepare claim %s/%s: %w", claim.Namespace, claim.Name, err)}
			continue
		}
		d.prepared[claim.UID] = devices
		result[claim.UID] = kubeletplugin.PrepareResult{Devices: devices}
	}
	if err := d.saveCheckpoint(); err != nil {
		return nil, err
	}
	klog.FromContext(ctx).V(4).Info("Prepared claims", "count", len(claims))
	return result, nil
}

func (d *Driver) prepareClaim(claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	if claim.Status.Allocation == nil {
		return nil, errors.New("claim is not allocated")
	}
	spec := cdispec.Spec{Version: cdispec.CurrentVersion, Kind: CDIKind(d.cfg.DriverName)}
	var devices []kubeletplugin.Device
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != d.cfg.DriverName {
			continue
		}
		dev, ok := d.devices[r.Device]
		if !ok || r.Pool != d.cfg.NodeName {
			return nil, fmt.Errorf("device %s/%s is not on node %s", r.Pool, r.Device, d.cfg.NodeName)
		}
		name := fmt.Sprintf("%s-%s", claim.UID, r.Device)
		spec.Devices = append(spec.Devices, cdispec.Device{Name: name, ContainerEdits: dev.Edits})
		devices = append(devices, kubeletplugin.Device{
			Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device,
			CDIDeviceIDs: []string{CDIKind(d.cfg.DriverName) + "=" + name},
		})
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(d.specPath(claim.UID), raw); err != nil {
		return nil, fmt.Errorf("write CDI spec: %w", err)
	}
	return devices, nil
}

// UnprepareResourceClaims removes the claims' CDI specs and checkpoint
// entries; unknown claims are already unprepared.
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	result := map[types.UID]error{}
	for _, claim := range claims {
		err := os.Remove(d.specPath(claim.UID))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			result[claim.UID] = fmt.Errorf("remove CDI spec of claim %s: %w", claim.NamespacedName, err)
			continue
		}
		delete(d.prepared, claim.UID)
		result[claim.UID] = nil
	}
	if err := d.saveCheckpoint(); err != nil {
		return nil, err
	}
	return result, nil
}

// HandleError logs errors of the helper's background work.
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	klog.FromContext(ctx).Error(err, msg)
}

// WatchHealthStatus is not supported by the test driver.
func (d *Driver) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}

// CDIKind is the CDI kind of the driver's per-claim specs.
func CDIKind(driverName string) string { return "k8s." + driverName + "/claim" }

func (d *Driver) specPath(uid types.UID) string {
	return filepath.Join(d.cfg.CDIDir, fmt.Sprintf("k8s.%s-claim_%s.json", d.cfg.DriverName, uid))
}

func (d *Driver) checkpointPath() string { return filepath.Join(d.cfg.PluginDir, CheckpointFile) }

func (d *Driver) loadCheckpoint() error {
	raw, err := os.ReadFile(d.checkpointPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read checkpoint: %w", err)
	}
	if err := json.Unmarshal(raw, &d.prepared); err != nil {
		return fmt.Errorf("decode checkpoint %s: %w", d.checkpointPath(), err)
	}
	return nil
}

func (d *Driver) saveCheckpoint() error {
	raw, err := json.Marshal(d.prepared)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(d.checkpointPath(), raw); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	return nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
