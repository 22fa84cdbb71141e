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

package v1beta1

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Prefixes of the device UUIDs a per-device MPS limit may be keyed by.
const (
	GpuUUIDPrefix = "GPU-"
	MigUUIDPrefix = "MIG-"
)

// PinnedMemoryLimits returns the pinned device memory limit of each device of a claim, keyed by UUID:
// defaultPinnedDeviceMemoryLimit for every device, overridden by defaultPerDevicePinnedMemoryLimit, whose
// keys are an index into uuids or one of the uuids. Devices without a limit are absent. A key that names
// no device of the claim is an error naming the valid keys.
func (c *MpsConfig) PinnedMemoryLimits(uuids []string) (map[string]resource.Quantity, error) {
	if c == nil {
		return nil, nil
	}
	limits := map[string]resource.Quantity{}
	if c.DefaultPinnedDeviceMemoryLimit != nil {
		for _, uuid := range uuids {
			limits[uuid] = c.DefaultPinnedDeviceMemoryLimit.DeepCopy()
		}
	}
	for _, key := range slices.Sorted(maps.Keys(c.DefaultPerDevicePinnedMemoryLimit)) {
		uuid, err := resolveDeviceKey(key, uuids)
		if err != nil {
			return nil, fmt.Errorf("mpsConfig.defaultPerDevicePinnedMemoryLimit[%s]: %w", key, err)
		}
		limits[uuid] = c.DefaultPerDevicePinnedMemoryLimit[key].DeepCopy()
	}
	if len(limits) == 0 {
		return nil, nil
	}
	return limits, nil
}

func resolveDeviceKey(key string, uuids []string) (string, error) {
	index, uuid, ok := parseDeviceKey(key)
	switch {
	case !ok:
		return "", fmt.Errorf(`must be a device index (e.g. "0") or a device UUID (e.g. "GPU-…", "MIG-…")`)
	case uuid != "":
		if !slices.Contains(uuids, uuid) {
			return "", fmt.Errorf("no device of the claim has this UUID; the claim's devices: %s", quoteAll(uuids))
		}
		return uuid, nil
	case index >= len(uuids):
		return "", fmt.Errorf("device index out of range: the claim has %d device(s), indices 0..%d", len(uuids), len(uuids)-1)
	default:
		return uuids[index], nil
	}
}

// parseDeviceKey splits a per-device key into a device index or a device UUID.
func parseDeviceKey(key string) (index int, uuid string, ok bool) {
	if strings.HasPrefix(key, GpuUUIDPrefix) || strings.HasPrefix(key, MigUUIDPrefix) {
		return 0, key, len(key) > len(GpuUUIDPrefix)
	}
	if key == "" || strings.TrimLeft(key, "0123456789") != "" {
		return 0, "", false
	}
	i, err := strconv.Atoi(key)
	if err != nil {
		return 0, "", false
	}
	return i, "", true
}
