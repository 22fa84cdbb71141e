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

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// Machine describes the mock GPUs of one simulated host: what a real node's
// hardware fixes and a kubelet plugin's flags cannot know when one DaemonSet
// serves nodes of different kinds. The simulated cluster writes one into each
// node's host root; a plugin reads it with --nvml-mock-machine-file.
type Machine struct {
	// Profile is an embedded profile name (ProfileNames).
	Profile string `json:"profile"`
	// Cluster seeds the NVLink cluster UUIDs.
	Cluster string `json:"cluster,omitempty"`
	// Rack is the host's NVLink domain; hosts of one cluster and rack share a clique.
	Rack int `json:"rack,omitempty"`
}

// ParseMachine decodes a machine file strictly; errors name the field.
func ParseMachine(data []byte) (Machine, error) {
	var m Machine
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		return Machine{}, fmt.Errorf("decode machine: %w", err)
	}
	if _, err := LoadProfile(m.Profile); err != nil {
		return Machine{}, fmt.Errorf("machine profile: %w", err)
	}
	if m.Rack < 0 {
		return Machine{}, fmt.Errorf("machine rack %d: want 0 or more", m.Rack)
	}
	return m, nil
}

// ReadMachineFile reads and parses a machine file.
func ReadMachineFile(path string) (Machine, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Machine{}, err
	}
	m, err := ParseMachine(data)
	if err != nil {
		return Machine{}, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// WriteFile writes the machine file, creating its directory.
func (m Machine) WriteFile(path string) error {
	data, err := yaml.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode machine: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
