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

package draplugin

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/backend"
)

// CheckpointFile is the checkpoint's name in the plugin's data directory.
const CheckpointFile = "checkpoint.json"

// OpenNVML opens the NVML backend the flags select, which reads the host's
// files under --host-root (f.NVML.HostRoot is set to it). The caller shuts
// it down.
func (f *Flags) OpenNVML(ctx context.Context) (nvml.Interface, error) {
	f.NVML.HostRoot = f.Root()
	return backend.Open(ctx, f.NVML)
}

// Root is the host root at --host-root. With --nvml=mock the node has no
// NVIDIA driver, and the root stands in for the driver's character devices
// that the kernel's /proc/devices lacks (hostroot.Root.WithMockDriver), so
// that IMEX channels are created and injected as real character devices, as
// the mock's GPUs are.
func (f *Flags) Root() hostroot.Root {
	root := hostroot.New(f.HostRoot)
	if f.NVML.Mode == backend.ModeMock {
		root = root.WithMockDriver()
	}
	return root
}

// NodeFiles are what a plugin keeps on its node: the per-claim CDI specs
// under --cdi-root and the checkpoint in <plugins dir>/<driver>, owned by
// the host's current boot.
func (f *Flags) NodeFiles() (*cdi.Writer, *checkpoint.Store, error) {
	bootID, err := hostroot.New(f.HostRoot).BootID()
	if err != nil {
		return nil, nil, fmt.Errorf("--host-root %s: %w", f.HostRoot, err)
	}
	writer, err := cdi.NewWriter(f.CDIRoot, f.DriverName)
	if err != nil {
		return nil, nil, fmt.Errorf("--cdi-root: %w", err)
	}
	return writer, checkpoint.NewStore(filepath.Join(f.Options().PluginDataDir(), CheckpointFile), bootID), nil
}
