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

	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
)

// MockClusterName seeds the mock NVML's NVLink cluster UUIDs: every node of
// one rack reports the same clique.
const MockClusterName = "simcluster"

// mockCliqueID is the clique the mock NVML reports for a node: what the GPU
// plugin labels the node with.
func mockCliqueID(profile, node string, rack int) (string, error) {
	lib, err := mock.New(mock.Config{NodeName: node, Profile: profile, Cluster: MockClusterName, Rack: max(rack, 0)})
	if err != nil {
		return "", err
	}
	if r := lib.Init(); r != nvml.SUCCESS {
		return "", fmt.Errorf("mock NVML of %s: init: %w", node, nvml.ReturnError(lib, "init", r))
	}
	defer lib.Shutdown()
	return nvml.NodeCliqueID(lib)
}
