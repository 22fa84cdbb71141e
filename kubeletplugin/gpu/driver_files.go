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

package gpu

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/computedomain-operator/computedomain-operator/internal/driverroot"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
)

// discoverDriverFiles finds, once at start, the driver's user-space files
// every claim's containers get (driverroot). Without a driver in the driver
// root, a plugin on real NVML fails; one on the mock mounts nothing.
func discoverDriverFiles(ctx context.Context, cfg Config) (driverroot.Files, error) {
	root := cfg.DriverRoot
	if root == "" {
		root = hostroot.New(cfg.HostRoot).Dir()
	}
	hostPath := cfg.DriverRootHostPath
	if hostPath == "" {
		hostPath = root
	}
	files, err := driverroot.Discover(driverroot.Options{HostRoot: hostroot.New(cfg.HostRoot), Root: root, HostPath: hostPath})
	logger := klog.FromContext(ctx)
	switch {
	case err == nil:
		logger.V(2).Info("Found the driver's files", "version", files.Version, "driverRoot", root, "hostPath", hostPath,
			"libraries", len(files.Libraries), "binaries", len(files.Binaries))
		return files, nil
	case errors.Is(err, driverroot.ErrNoDriver) && !cfg.RequireDriverFiles:
		logger.Info("No NVIDIA driver in the driver root; claims get no driver files", "driverRoot", root)
		return driverroot.Files{}, nil
	default:
		return driverroot.Files{}, fmt.Errorf("driver files: %w", err)
	}
}
