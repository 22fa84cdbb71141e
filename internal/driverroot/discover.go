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

package driverroot

import (
	"fmt"
	"path/filepath"

	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
)

// Options locate the driver.
type Options struct {
	// HostRoot is where the host's /proc is visible; the loaded kernel
	// module's version is read there.
	HostRoot hostroot.Root
	// Root is the driver root as the plugin sees it.
	Root string
	// HostPath is Root's path on the host, which the CDI mounts name.
	HostPath string
}

// Files are the driver's user-space files found in a driver root.
type Files struct {
	// Version is the driver version ("580.95.05").
	Version string
	// HostPath is the driver root on the host.
	HostPath string
	// Libraries, Binaries and Firmware are relative to the driver root.
	Libraries []Library
	Binaries  []string
	Firmware  string
}

// Discover finds the driver's version and then its libraries, tools and
// firmware of that version. No driver at all is an error wrapping
// ErrNoDriver, which a caller without a real GPU (the mock) may take as no
// files.
func Discover(o Options) (Files, error) {
	if !filepath.IsAbs(o.Root) || !filepath.IsAbs(o.HostPath) {
		return Files{}, fmt.Errorf("driver root %q on host path %q: both must be absolute paths", o.Root, o.HostPath)
	}
	version, err := driverVersion(o.HostRoot, o.Root)
	if err != nil {
		return Files{}, fmt.Errorf("discover driver files: %w", err)
	}
	libs, err := findLibraries(o.Root, version)
	if err != nil {
		return Files{}, fmt.Errorf("discover driver files: %w", err)
	}
	return Files{
		Version:   version,
		HostPath:  filepath.Clean(o.HostPath),
		Libraries: libs,
		Binaries:  findBinaries(o.Root),
		Firmware:  findFirmware(o.Root, version),
	}, nil
}
