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

package topology

import (
	"fmt"
	"strconv"
	"strings"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// Label keys set on simulated nodes.
const (
	// CliqueLabel is the NVLink clique of the node ("<clusterUUID>.<cliqueId>").
	CliqueLabel = "nvidia.com/gpu.clique"
	// ProfileLabel names the simulated GPU profile of the node.
	ProfileLabel = "simcluster.computedomain-operator.io/gpu-profile"
	// RackLabel is the rack index of a rack node.
	RackLabel = "simcluster.computedomain-operator.io/rack"
	// GPUPresentLabel marks a node with NVIDIA GPUs.
	GPUPresentLabel = "nvidia.com/gpu.present"
)

// NodePool is a number of nodes of one profile outside the racks.
type NodePool struct {
	Profile string
	Count   int
}

// Topology is the shape of the simulated cluster.
type Topology struct {
	// Profile of the rack nodes (default gb200-nvl72).
	Profile string
	// Racks × NodesPerRack rack nodes; every rack is one NVLink clique when
	// the profile has multi-node NVLink.
	Racks        int
	NodesPerRack int
	// Extra nodes outside the racks.
	Extra []NodePool
}

// NodeSpec is one simulated node.
type NodeSpec struct {
	Name    string
	Profile GPUProfile
	// IP is the node's loopback address 127.0.A.B, unique within the
	// machine while the cluster holds its address block (see NodeIP).
	IP string
	// Rack is the rack index, -1 for extra nodes.
	Rack int
	// CliqueID is "<clusterUUID>.<cliqueId>" or empty without multi-node NVLink.
	CliqueID string
	Labels   map[string]string
}

// ParseNodePools parses "hgx-h100-8:4,a100-40gb-mig:2".
func ParseNodePools(s string) ([]NodePool, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var pools []NodePool
	for _, item := range strings.Split(s, ",") {
		profile, count, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok {
			return nil, fmt.Errorf("--extra item %q: want <profile>:<count>, profile one of %s", item, strings.Join(ProfileNames(), ", "))
		}
		if !isKnownProfile(profile) {
			return nil, fmt.Errorf("--extra item %q: unknown profile %q, allowed values are %s", item, profile, strings.Join(ProfileNames(), ", "))
		}
		n, err := strconv.Atoi(count)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--extra item %q: count must be a positive integer", item)
		}
		pools = append(pools, NodePool{Profile: profile, Count: n})
	}
	return pools, nil
}

// Validate names the first invalid field with its allowed values.
func (t Topology) Validate() error {
	if !isKnownProfile(t.Profile) {
		return fmt.Errorf("profile %q is unknown: allowed values are %s", t.Profile, strings.Join(ProfileNames(), ", "))
	}
	if t.Racks < 0 || t.NodesPerRack < 0 {
		return fmt.Errorf("racks (%d) and nodes-per-rack (%d) must be >= 0", t.Racks, t.NodesPerRack)
	}
	if p := profiles[t.Profile]; p.MultiNodeNVLink && t.NodesPerRack > cdv1beta1.NVL72CliqueSize {
		return fmt.Errorf("nodes-per-rack %d exceeds %d, the compute trays of one NVL72 rack", t.NodesPerRack, cdv1beta1.NVL72CliqueSize)
	}
	total := t.Racks * t.NodesPerRack
	for _, pool := range t.Extra {
		if !isKnownProfile(pool.Profile) {
			return fmt.Errorf("extra profile %q is unknown: allowed values are %s", pool.Profile, strings.Join(ProfileNames(), ", "))
		}
		if pool.Count < 1 {
			return fmt.Errorf("extra pool %q: count must be >= 1", pool.Profile)
		}
		total += pool.Count
	}
	if total == 0 {
		return fmt.Errorf("the topology has no nodes: set racks and nodes-per-rack, or extra")
	}
	if total > NodesPerAddressOctet*MaxAddressOctet {
		return fmt.Errorf("the topology has %d nodes, more than the %d loopback addresses 127.0.<1-%d>.<1-%d>", total, NodesPerAddressOctet*MaxAddressOctet, MaxAddressOctet, NodesPerAddressOctet)
	}
	return nil
}

// NodeCount is the number of nodes of the topology: the racks' and the extra
// pools'.
func (t Topology) NodeCount() int {
	total := t.Racks * t.NodesPerRack
	for _, pool := range t.Extra {
		total += pool.Count
	}
	return total
}

// AddressOctets is how many values of A the node IPs 127.0.A.B span: one per
// NodesPerAddressOctet nodes. A cluster holds that many consecutive values as
// its address block.
func (t Topology) AddressOctets() int {
	return (t.NodeCount() + NodesPerAddressOctet - 1) / NodesPerAddressOctet
}

// Nodes lays the topology out: rack nodes first, then the extra pools, with
// the node IPs of the address block after addressBase (see NodeIP). The
// clique of a rack is the one the mock NVML reports for it (what the GPU
// plugin labels its node with).
func (t Topology) Nodes(addressBase int) ([]NodeSpec, error) {
	if err := checkAddressBlock(addressBase, t.AddressOctets()); err != nil {
		return nil, fmt.Errorf("the %d nodes of the topology: %w", t.NodeCount(), err)
	}
	var nodes []NodeSpec
	add := func(name string, p GPUProfile, rack int, clique string) {
		i := len(nodes)
		labels := map[string]string{
			"kubernetes.io/hostname": name,
			"kubernetes.io/os":       "linux",
			"kubernetes.io/arch":     "amd64",
			ProfileLabel:             p.Name,
			// As NVIDIA's GPU feature discovery labels GPU nodes: the chart's
			// kubelet-plugin DaemonSet selects them by it.
			GPUPresentLabel: "true",
		}
		if rack >= 0 {
			labels[RackLabel] = strconv.Itoa(rack)
		}
		if clique != "" {
			labels[CliqueLabel] = clique
		}
		nodes = append(nodes, NodeSpec{
			Name: name, Profile: p, Rack: rack, CliqueID: clique, Labels: labels,
			IP: nodeIP(addressBase, i),
		})
	}
	rackProfile := profiles[t.Profile]
	for r := 0; r < t.Racks; r++ {
		clique := ""
		if rackProfile.MultiNodeNVLink {
			var err error
			if clique, err = mockCliqueID(rackProfile.Name, fmt.Sprintf("%s-r%d", rackProfile.ShortName, r), r); err != nil {
				return nil, fmt.Errorf("clique of rack %d: %w", r, err)
			}
		}
		for n := 0; n < t.NodesPerRack; n++ {
			add(fmt.Sprintf("%s-r%d-n%02d", rackProfile.ShortName, r, n), rackProfile, r, clique)
		}
	}
	next := map[string]int{}
	for _, pool := range t.Extra {
		p := profiles[pool.Profile]
		for range pool.Count {
			add(fmt.Sprintf("%s-%d", p.ShortName, next[p.ShortName]), p, -1, "")
			next[p.ShortName]++
		}
	}
	return nodes, nil
}
