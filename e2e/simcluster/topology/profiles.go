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

// Package topology describes the shape of a simulated GPU cluster: GPU
// profiles (the mock NVML's names), racks that share an NVLink clique, extra
// node pools, node names, loopback addresses and labels.
package topology

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// GPUProfile describes the GPUs of one kind of simulated node. The names are
// the profile names of the mock NVML (internal/nvml/mock).
type GPUProfile struct {
	// Name is the profile name, e.g. "gb200-nvl72".
	Name string
	// ShortName prefixes node names, e.g. "gb200".
	ShortName string
	// GPUs is the number of GPUs per node.
	GPUs int
	// ProductName, Architecture and MemoryBytes describe each GPU.
	ProductName  string
	Architecture string
	MemoryBytes  int64
	// MultiNodeNVLink is true when nodes of one rack share an NVLink clique.
	MultiNodeNVLink bool
	// MIG lists the static MIG devices of each GPU; empty when MIG is off.
	MIG []MIGSlice
	// CPU and Memory are the node's capacity.
	CPU    string
	Memory string
}

// MIGSlice is one static MIG device on a GPU.
type MIGSlice struct {
	Profile        string
	GIProfileID    int
	PlacementStart int
	MemoryBytes    int64
}

const gib = int64(1) << 30

var profiles = map[string]GPUProfile{
	"gb200-nvl72": {
		Name: "gb200-nvl72", ShortName: "gb200", GPUs: 4,
		ProductName: "NVIDIA GB200", Architecture: "Blackwell", MemoryBytes: 186 * gib,
		MultiNodeNVLink: true, CPU: "144", Memory: "960Gi",
	},
	"hgx-h100-8": {
		Name: "hgx-h100-8", ShortName: "h100", GPUs: 8,
		ProductName: "NVIDIA H100 80GB HBM3", Architecture: "Hopper", MemoryBytes: 80 * gib,
		CPU: "112", Memory: "2048Gi",
	},
	"a100-40gb-mig": {
		Name: "a100-40gb-mig", ShortName: "a100", GPUs: 8,
		ProductName: "NVIDIA A100-SXM4-40GB", Architecture: "Ampere", MemoryBytes: 40 * gib,
		MIG: []MIGSlice{
			{Profile: "3g.20gb", GIProfileID: 9, PlacementStart: 0, MemoryBytes: 20 * gib},
			{Profile: "2g.10gb", GIProfileID: 14, PlacementStart: 4, MemoryBytes: 10 * gib},
			{Profile: "1g.5gb", GIProfileID: 19, PlacementStart: 6, MemoryBytes: 5 * gib},
		},
		CPU: "128", Memory: "1024Gi",
	},
}

// ProfileNames lists the known profiles in a stable order.
func ProfileNames() []string {
	names := make([]string, 0, len(profiles))
	for name := range profiles {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// MIGDeviceName follows the compatible naming
// gpu-<parentMinor>-mig-<profile without dots>-<giProfileID>-<placementStart>.
func MIGDeviceName(parentMinor int, s MIGSlice) string {
	return fmt.Sprintf("gpu-%d-mig-%s-%d-%d", parentMinor, strings.ReplaceAll(s.Profile, ".", ""), s.GIProfileID, s.PlacementStart)
}

func isKnownProfile(name string) bool {
	return slices.Contains(ProfileNames(), name)
}
