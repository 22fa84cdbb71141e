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

package computedomain

import (
	"fmt"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// Default slot counts: enough for several domains with pods on one node. A
// slot is only a scheduling token; the channel a pod receives is its domain's.
const (
	DefaultChannelSlots = 32
	DefaultDaemonSlots  = 16
	// MaxSlots caps channel and daemon slots together, so that both kinds
	// fit in one ResourceSlice (128 devices).
	MaxSlots = 128
)

// Device name prefixes.
const (
	channelPrefix = "channel-"
	daemonPrefix  = "daemon-"
)

// Attribute names (qualified by the driver name when published).
const (
	attrType   = "type"
	attrID     = "id"
	attrClique = "cliqueID"
)

// ChannelDeviceName and DaemonDeviceName name slot i.
func ChannelDeviceName(i int) string { return channelPrefix + strconv.Itoa(i) }

// DaemonDeviceName names daemon slot i.
func DaemonDeviceName(i int) string { return daemonPrefix + strconv.Itoa(i) }

// deviceKind returns the device type of a published device name.
func deviceKind(name string, channelSlots, daemonSlots int) (string, error) {
	for _, k := range []struct {
		prefix, kind string
		slots        int
	}{{channelPrefix, apiv1beta1.DeviceTypeChannel, channelSlots}, {daemonPrefix, apiv1beta1.DeviceTypeDaemon, daemonSlots}} {
		if rest, ok := strings.CutPrefix(name, k.prefix); ok {
			i, err := strconv.Atoi(rest)
			if err != nil || i < 0 || i >= k.slots || strconv.Itoa(i) != rest {
				return "", fmt.Errorf("device %q is not published by this node (slots %s0..%s%d)", name, k.prefix, k.prefix, k.slots-1)
			}
			return k.kind, nil
		}
	}
	return "", fmt.Errorf("device %q is not published by this node: names are %s<i> and %s<i>", name, channelPrefix, daemonPrefix)
}

// BuildResources returns the node's pool: channelSlots channel devices and
// daemonSlots daemon devices, each with its type, id and, on a node with a
// multi-node fabric, its clique.
func BuildResources(nodeName, driverName, cliqueID string, channelSlots, daemonSlots int) resourceslice.DriverResources {
	attrs := func(kind string, i int) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
		a := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			attrType: {StringValue: ptr.To(kind)},
			attrID:   {IntValue: ptr.To(int64(i))},
		}
		if cliqueID != "" {
			a[attrClique] = resourceapi.DeviceAttribute{StringValue: ptr.To(cliqueID)}
		}
		return a
	}
	var devices []resourceapi.Device
	for i := range channelSlots {
		devices = append(devices, resourceapi.Device{Name: ChannelDeviceName(i), Attributes: attrs(apiv1beta1.DeviceTypeChannel, i)})
	}
	for i := range daemonSlots {
		devices = append(devices, resourceapi.Device{Name: DaemonDeviceName(i), Attributes: attrs(apiv1beta1.DeviceTypeDaemon, i)})
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		nodeName: {Slices: []resourceslice.Slice{{Devices: devices}}},
	}}
}
