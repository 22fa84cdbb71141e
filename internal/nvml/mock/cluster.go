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

package mock

import "fmt"

// ClusterSpec describes a simulated cluster of identical nodes.
type ClusterSpec struct {
	// Name seeds node names and fabric cluster UUIDs; default "sim".
	Name string
	// Profile names an embedded profile; ProfileSpec overrides it.
	Profile     string
	ProfileSpec *Profile
	// Racks is the number of racks (NVLink domains); default 1.
	Racks int
	// NodesPerRack is the number of nodes (compute trays) per rack; default
	// the profile's fabric.nodesPerRack (18 on NVL72), else 1.
	NodesPerRack int
	// MIG is passed to every node's Config.
	MIG MIGMode
}

// NodeSpec is one node of a cluster.
type NodeSpec struct {
	// Name is "<cluster>-r<rack>-n<node>", e.g. "sim-r00-n07".
	Name   string
	Rack   int
	Node   int
	Config Config
}

// Nodes lays the cluster out: racks × nodes per rack, each with the Config
// that New needs. Nodes of one rack share a clique when the profile has a
// fabric.
func (c ClusterSpec) Nodes() ([]NodeSpec, error) {
	p := c.ProfileSpec
	if p == nil {
		var err error
		if p, err = LoadProfile(c.Profile); err != nil {
			return nil, err
		}
	}
	if c.Name == "" {
		c.Name = DefaultClusterName
	}
	if c.Racks == 0 {
		c.Racks = 1
	}
	if c.NodesPerRack == 0 {
		c.NodesPerRack = 1
		if p.multiNode() {
			c.NodesPerRack = p.Fabric.NodesPerRack
		}
	}
	if c.Racks < 0 || c.NodesPerRack < 0 {
		return nil, fmt.Errorf("cluster %s: racks %d and nodesPerRack %d: want positive numbers", c.Name, c.Racks, c.NodesPerRack)
	}
	out := make([]NodeSpec, 0, c.Racks*c.NodesPerRack)
	for r := 0; r < c.Racks; r++ {
		for n := 0; n < c.NodesPerRack; n++ {
			name := fmt.Sprintf("%s-r%02d-n%02d", c.Name, r, n)
			out = append(out, NodeSpec{
				Name: name,
				Rack: r,
				Node: n,
				Config: Config{
					NodeName:    name,
					ProfileSpec: p,
					Cluster:     c.Name,
					Rack:        r,
					MIG:         c.MIG,
				},
			})
		}
	}
	return out, nil
}
