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

package app

import (
	"context"
	"fmt"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/deviceattribute"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml/backend"
	"github.com/computedomain-operator/computedomain-operator/kubeletplugin/gpu"
)

// ProfileComparison is what inspect --compare-profile adds: where the devices
// this node publishes differ from those a mock node of the profile publishes.
// Run on a real GPU node, it shows where a mock profile must be fixed.
type ProfileComparison struct {
	Profile     string   `json:"profile"`
	Differences []string `json:"differences"`
}

// identityAttributes differ between any two nodes, real or mock.
var identityAttributes = map[resourceapi.QualifiedName]bool{
	"uuid": true, "parentUUID": true, "cliqueID": true,
	deviceattribute.StandardDeviceAttributePCIBusID: true,
	deviceattribute.StandardDeviceAttributePCIeRoot: true,
}

// compareWithProfile builds the mock node of the profile (same node name, MIG
// mode and partitionable setting) and lists the differences.
func compareWithProfile(ctx context.Context, o *options, profile string, real []*resourceapi.ResourceSlice) (*ProfileComparison, error) {
	mo := o.NVML
	mo.Mode, mo.Profile, mo.ProfileFile, mo.FaultFile = backend.ModeMock, profile, "", ""
	mo.NodeName = o.NodeName
	lib, err := backend.Open(ctx, mo)
	if err != nil {
		return nil, fmt.Errorf("--compare-profile: %w", err)
	}
	defer lib.Shutdown()
	inv, err := gpu.DiscoverInventory(ctx, lib, o.HostRoot)
	if err != nil {
		return nil, fmt.Errorf("--compare-profile: %w", err)
	}
	res := gpu.BuildResources(inv, gpu.PublishOptions{PoolName: o.NodeName, PartitionableMIG: o.partitionableMIG, Shares: o.shares})
	return &ProfileComparison{Profile: profile, Differences: diffDevices(real, gpu.ResourceSlices(o.DriverName, o.NodeName, res))}, nil
}

func devicesByName(slices []*resourceapi.ResourceSlice) map[string]resourceapi.Device {
	out := map[string]resourceapi.Device{}
	for _, s := range slices {
		for _, d := range s.Spec.Devices {
			out[d.Name] = d
		}
	}
	return out
}

func attrString(a resourceapi.DeviceAttribute) string {
	switch {
	case a.StringValue != nil:
		return *a.StringValue
	case a.VersionValue != nil:
		return "version " + *a.VersionValue
	case a.IntValue != nil:
		return fmt.Sprint(*a.IntValue)
	case a.BoolValue != nil:
		return fmt.Sprint(*a.BoolValue)
	}
	return "<empty>"
}

// diffDevices lists, in a stable order, devices present on one side only and
// attributes or capacities that differ (identity attributes excluded).
func diffDevices(real, mock []*resourceapi.ResourceSlice) []string {
	r, m := devicesByName(real), devicesByName(mock)
	var names []string
	for n := range r {
		names = append(names, n)
	}
	for n := range m {
		if _, ok := r[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out []string
	for _, n := range names {
		rd, inReal := r[n]
		md, inMock := m[n]
		switch {
		case !inMock:
			out = append(out, fmt.Sprintf("%s: published by this node, not by the profile", n))
			continue
		case !inReal:
			out = append(out, fmt.Sprintf("%s: published by the profile, not by this node", n))
			continue
		}
		keys := map[resourceapi.QualifiedName]bool{}
		for k := range rd.Attributes {
			keys[k] = true
		}
		for k := range md.Attributes {
			keys[k] = true
		}
		var sorted []string
		for k := range keys {
			sorted = append(sorted, string(k))
		}
		slices.Sort(sorted)
		for _, k := range sorted {
			q := resourceapi.QualifiedName(k)
			if identityAttributes[q] {
				continue
			}
			ra, rok := rd.Attributes[q]
			ma, mok := md.Attributes[q]
			switch {
			case !mok:
				out = append(out, fmt.Sprintf("%s: attribute %s=%q missing in the profile", n, k, attrString(ra)))
			case !rok:
				out = append(out, fmt.Sprintf("%s: attribute %s=%q only in the profile", n, k, attrString(ma)))
			case attrString(ra) != attrString(ma):
				out = append(out, fmt.Sprintf("%s: attribute %s: node %q, profile %q", n, k, attrString(ra), attrString(ma)))
			}
		}
		var caps []string
		for k := range rd.Capacity {
			caps = append(caps, string(k))
		}
		for k := range md.Capacity {
			if _, ok := rd.Capacity[k]; !ok {
				caps = append(caps, string(k))
			}
		}
		slices.Sort(caps)
		for _, k := range caps {
			q := resourceapi.QualifiedName(k)
			rc, rok := rd.Capacity[q]
			mc, mok := md.Capacity[q]
			switch {
			case !mok:
				out = append(out, fmt.Sprintf("%s: capacity %s=%s missing in the profile", n, k, rc.Value.String()))
			case !rok:
				out = append(out, fmt.Sprintf("%s: capacity %s=%s only in the profile", n, k, mc.Value.String()))
			case rc.Value.Cmp(mc.Value) != 0:
				out = append(out, fmt.Sprintf("%s: capacity %s: node %s, profile %s", n, k, rc.Value.String(), mc.Value.String()))
			}
		}
	}
	return out
}
