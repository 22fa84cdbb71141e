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

// Package hostroot resolves host paths (/dev, /proc, /sys) under one root
// directory: "/" on a real node, a temporary directory populated by Fake in
// tests and in the simulated cluster. Every component that reads or creates
// host files takes a Root instead of using absolute paths, so that no test
// touches the real /dev or /proc.
package hostroot

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Well-known host paths.
const (
	ProcDevices           = "/proc/devices"
	BootIDFile            = "/proc/sys/kernel/random/boot_id"
	ImexChannelDir        = "/dev/nvidia-caps-imex-channels"
	ImexChannelDeviceName = "nvidia-caps-imex-channels"
	CapabilitiesDir       = "/proc/driver/nvidia/capabilities"
	MIGMinorsFile         = "/proc/driver/nvidia-caps/mig-minors"
	NvidiaCapsDir         = "/dev/nvidia-caps"
	DriverVersionFile     = "/proc/driver/nvidia/version"
)

// Root is a host root directory. The zero value is the real root "/".
type Root struct {
	dir string
	// mockDriver: the NVIDIA driver's character devices missing from
	// /proc/devices have the mock driver's majors (WithMockDriver).
	mockDriver bool
}

// New returns the root at dir; "" and "/" mean the real host.
func New(dir string) Root {
	if dir == "" {
		dir = "/"
	}
	return Root{dir: filepath.Clean(dir)}
}

// Dir returns the root directory.
func (r Root) Dir() string {
	if r.dir == "" {
		return "/"
	}
	return r.dir
}

// IsHost reports whether the root is the real host's "/".
func (r Root) IsHost() bool { return r.Dir() == "/" }

// Path maps an absolute host path ("/dev/nvidia0") into the root.
func (r Root) Path(hostPath string) string {
	if !strings.HasPrefix(hostPath, "/") {
		hostPath = "/" + hostPath
	}
	return filepath.Join(r.Dir(), filepath.Clean(hostPath))
}

// HostPath maps a path inside the root back to the host path it stands for,
// for writing CDI specs and mounts that name host paths.
func (r Root) HostPath(path string) (string, error) {
	rel, err := filepath.Rel(r.Dir(), path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("path %s is not under host root %s", path, r.Dir())
	}
	return filepath.Join("/", rel), nil
}

// ImexChannelPath is the host path of IMEX channel n inside the root.
func (r Root) ImexChannelPath(n int) string {
	return r.Path(fmt.Sprintf("%s/channel%d", ImexChannelDir, n))
}
