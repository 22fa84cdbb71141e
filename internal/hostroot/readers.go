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

package hostroot

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
)

// ErrNotFound is wrapped when a device name or capability is not present.
var ErrNotFound = errors.New("not found")

// CharDeviceMajor returns the major number of a character device driver from
// the "Character devices:" section of /proc/devices; on a mock-driver root
// (WithMockDriver), the mock driver's major of an NVIDIA device the kernel
// does not list.
func (r Root) CharDeviceMajor(name string) (uint32, error) {
	kernel, err := r.charMajors(name)
	if err != nil {
		return 0, err
	}
	for _, m := range kernel {
		if m.name == name {
			return m.major, nil
		}
	}
	if r.mockDriver {
		major, ok, err := mockDriverMajor(name, kernel)
		if err != nil || ok {
			return major, err
		}
	}
	return 0, fmt.Errorf("%s: character device %q: %w", ProcDevices, name, ErrNotFound)
}

// charMajors reads the "Character devices:" section of /proc/devices; a line
// that is not "<major> <name>" is skipped, unless it is the one of name.
func (r Root) charMajors(name string) ([]charMajor, error) {
	data, err := os.ReadFile(r.Path(ProcDevices))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ProcDevices, err)
	}
	var out []charMajor
	inChar := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			continue
		case strings.HasSuffix(line, ":"):
			inChar = line == "Character devices:"
			continue
		case !inChar:
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			continue
		}
		major, err := strconv.ParseUint(fields[0], 10, 32)
		if err != nil {
			if fields[1] == name {
				return nil, fmt.Errorf("%s: major of %s: %w", ProcDevices, name, err)
			}
			continue
		}
		out = append(out, charMajor{major: uint32(major), name: fields[1]})
	}
	return out, nil
}

// ImexChannelMajor returns the major number of the IMEX channel devices
// (the nvidia-caps-imex-channels line of /proc/devices).
func (r Root) ImexChannelMajor() (uint32, error) {
	return r.CharDeviceMajor(ImexChannelDeviceName)
}

// BootID returns the kernel's boot ID, which changes on every reboot.
func (r Root) BootID() (string, error) {
	data, err := os.ReadFile(r.Path(BootIDFile))
	if err != nil {
		return "", fmt.Errorf("read boot ID: %w", err)
	}
	id := strings.TrimSpace(string(data))
	if id == "" {
		return "", fmt.Errorf("%s is empty", BootIDFile)
	}
	return id, nil
}

// ImexChannels lists the channel numbers that have a device entry under
// /dev/nvidia-caps-imex-channels, in order. A missing directory is no
// channels.
func (r Root) ImexChannels() ([]int, error) {
	entries, err := os.ReadDir(r.Path(ImexChannelDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list IMEX channels: %w", err)
	}
	var out []int
	for _, e := range entries {
		n, ok := strings.CutPrefix(e.Name(), "channel")
		if !ok {
			continue
		}
		if v, err := strconv.Atoi(n); err == nil && v >= 0 {
			out = append(out, v)
		}
	}
	sort.Ints(out)
	return out, nil
}

// CapabilityMinor returns the DeviceFileMinor of a driver capability, named
// relative to /proc/driver/nvidia/capabilities ("mig/config",
// "fabric-imex-mgmt", "gpu0/mig/gi1/access", "gpu0/mig/gi1/ci0/access").
// The device file is /dev/nvidia-caps/nvidia-cap<minor>.
func (r Root) CapabilityMinor(capability string) (uint32, error) {
	file := r.Path(CapabilitiesDir + "/" + strings.TrimPrefix(capability, "/"))
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("capability %s: %w", capability, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("capability %s: %w", capability, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "DeviceFileMinor:"); ok {
			minor, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return 0, fmt.Errorf("capability %s: DeviceFileMinor: %w", capability, err)
			}
			return uint32(minor), nil
		}
	}
	return 0, fmt.Errorf("capability %s: no DeviceFileMinor line", capability)
}

// MIGCapabilities returns the capability names ("gpu0/mig/gi1/access",
// "gpu0/mig/gi1/ci0/access") a MIG device needs, for CapabilityMinor.
func MIGCapabilities(gpuMinor, gi, ci int) (giAccess, ciAccess string) {
	giAccess = fmt.Sprintf("gpu%d/mig/gi%d/access", gpuMinor, gi)
	ciAccess = fmt.Sprintf("gpu%d/mig/gi%d/ci%d/access", gpuMinor, gi, ci)
	return giAccess, ciAccess
}

// NvidiaCapDevice is the host path of the device file of a capability minor.
func NvidiaCapDevice(minor uint32) string {
	return fmt.Sprintf("%s/nvidia-cap%d", NvidiaCapsDir, minor)
}
