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
