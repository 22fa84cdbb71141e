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

package simcluster

import (
	"fmt"
	"path/filepath"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
)

// fakeHostRoot lays out a node's host root as its hardware would have it: the
// mock's /dev, /proc and /sys, the driver's files, and the machine file that
// tells the chart's plugins (one DaemonSet for every kind of node) which mock
// GPUs this node has.
func fakeHostRoot(spec topology.NodeSpec, root string) error {
	profile, err := mock.LoadProfile(spec.Profile.Name)
	if err != nil {
		return err
	}
	if _, err := hostroot.Fake(root, profile.FakeHostRootSpec(spec.Name)); err != nil {
		return fmt.Errorf("node %s: fake host root: %w", spec.Name, err)
	}
	machine := mock.Machine{Profile: spec.Profile.Name, Cluster: topology.MockClusterName, Rack: max(spec.Rack, 0)}
	if err := machine.WriteFile(filepath.Join(root, MockMachineFile)); err != nil {
		return fmt.Errorf("node %s: mock machine file: %w", spec.Name, err)
	}
	return nil
}
