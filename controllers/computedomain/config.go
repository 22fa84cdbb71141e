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
	"time"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// Defaults of Config.
const (
	DefaultDriverName         = v1beta1.ComputeDomainDriverName
	DefaultChannelDeviceClass = "compute-domain-default-channel.nvidia.com"
)

// Config is what the reconciler needs to know about its installation.
type Config struct {
	// OperatorNamespace holds the long-lived IMEX daemons, their IMEXNodes and the IMEXCliques.
	OperatorNamespace string
	// DriverName is the compute-domain DRA driver that the claim templates' opaque configs address.
	DriverName string
	// ChannelDeviceClass is the DeviceClass of the workload channel claims.
	ChannelDeviceClass string
	// MaxNodesPerClique caps one clique's IMEX ensemble (18 on NVL72).
	MaxNodesPerClique int
	// MaxChannels is the number of IMEX channels per node (channel0..channel<MaxChannels-1>).
	MaxChannels int32
	// CliquePlacement turns on the clique placement fallback for clusters without the Workload API: pods the
	// webhook held behind v1beta1.CliquePlacementGate are pinned to one clique and released together.
	CliquePlacement bool
	// GPUDriverName is the DRA driver of the GPUs whose allocations make a node busy for the fallback's pick.
	GPUDriverName string
	// StatusWriteInterval is the shortest time between two status writes of one domain (0: none); changes
	// in between are written together at its end.
	StatusWriteInterval time.Duration
}

// WithDefaults returns the config with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.DriverName == "" {
		c.DriverName = DefaultDriverName
	}
	if c.GPUDriverName == "" {
		c.GPUDriverName = v1beta1.GPUDriverName
	}
	if c.ChannelDeviceClass == "" {
		c.ChannelDeviceClass = DefaultChannelDeviceClass
	}
	if c.MaxNodesPerClique == 0 {
		c.MaxNodesPerClique = v1beta1.NVL72CliqueSize
	}
	if c.MaxChannels == 0 {
		c.MaxChannels = DefaultMaxChannels
	}
	return c
}

// Validate names the first field that is unusable.
func (c Config) Validate() error {
	switch {
	case c.OperatorNamespace == "":
		return fmt.Errorf("operator namespace: must be set (the namespace the controller runs in)")
	case c.MaxNodesPerClique < 1:
		return fmt.Errorf("max nodes per clique: %d, must be at least 1", c.MaxNodesPerClique)
	case c.MaxChannels < FirstChannel+1:
		return fmt.Errorf("max channels: %d, must be at least %d", c.MaxChannels, FirstChannel+1)
	}
	return nil
}
