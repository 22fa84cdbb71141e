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
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// PCI sysfs and VFIO paths.
const (
	PCIDevicesDir  = "/sys/bus/pci/devices"
	PCIDriversDir  = "/sys/bus/pci/drivers"
	IOMMUGroupsDir = "/sys/kernel/iommu_groups"
	VFIODir        = "/dev/vfio"
	// VFIOContainerDevice is the legacy VFIO API device.
	VFIOContainerDevice = "/dev/vfio/vfio"
	// IOMMUDevice is the iommufd API device; its presence means the kernel
	// has iommufd.
	IOMMUDevice = "/dev/iommu"
	// VFIOCdevDir holds the per-device iommufd character devices.
	VFIOCdevDir = "/dev/vfio/devices"
)

// PCI drivers a GPU is bound to.
const (
	NvidiaPCIDriver = "nvidia"
	VFIOPCIDriver   = "vfio-pci"
)

// NvidiaPCIVendor is the PCI vendor ID of NVIDIA.
const NvidiaPCIVendor = "0x10de"

// PCIDevicePath is the sysfs directory of a PCI function (a symlink into
// /sys/devices).
func PCIDevicePath(busID string) string { return PCIDevicesDir + "/" + busID }

// PCIDriver returns the driver a PCI function is bound to ("" for none), as
// the name its sysfs driver link points to.
func (r Root) PCIDriver(busID string) (string, error) {
	target, err := os.Readlink(r.Path(PCIDevicePath(busID) + "/driver"))
	if errors.Is(err, fs.ErrNotExist) {
		if _, statErr := os.Stat(r.Path(PCIDevicePath(busID))); statErr != nil {
			return "", fmt.Errorf("PCI function %s: %w", busID, statErr)
		}
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("PCI function %s: driver: %w", busID, err)
	}
	return filepath.Base(target), nil
}

// PCIIOMMUGroup returns a PCI function's IOMMU group, -1 without one (no
// IOMMU).
func (r Root) PCIIOMMUGroup(busID string) (int, error) {
	target, err := os.Readlink(r.Path(PCIDevicePath(busID) + "/iommu_group"))
	if errors.Is(err, fs.ErrNotExist) {
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("PCI function %s: iommu_group: %w", busID, err)
	}
	g, err := strconv.Atoi(filepath.Base(target))
	if err != nil {
		return -1, fmt.Errorf("PCI function %s: iommu_group %q: not a number", busID, target)
	}
	return g, nil
}

// ReadSysfs reads a sysfs attribute file of the root, trimmed.
func (r Root) ReadSysfs(hostPath string) (string, error) {
	data, err := os.ReadFile(r.Path(hostPath))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(data)), nil
}

// CharDeviceNumbers returns the major and minor of a character device node
// of the root: from the node on a host, from the entry's "c MAJOR:MINOR" on a
// fake root.
func (r Root) CharDeviceNumbers(hostPath string) (major, minor uint32, err error) {
	if r.IsFake() {
		return r.FakeDeviceNumbers(hostPath)
	}
	var st unix.Stat_t
	if err := unix.Stat(r.Path(hostPath), &st); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", hostPath, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return 0, 0, fmt.Errorf("%s: not a character device", hostPath)
	}
	return unix.Major(st.Rdev), unix.Minor(st.Rdev), nil
}
