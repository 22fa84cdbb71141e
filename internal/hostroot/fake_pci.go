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
	"strings"
	"sync"
	"syscall"
)

// Character majors of the fake's VFIO devices: /dev/vfio/vfio is the misc
// device 10:196; the group devices have the dynamic "vfio" major, which the
// fake's /proc/devices lists.
const (
	fakeVFIOMajor          = 241
	fakeVFIOContainerMinor = 196
	fakeVFIOCdevMajor      = 240
)

// fakeIOMMUGroupBase numbers the fake's IOMMU groups: the GPU at index i of
// FakeSpec.PCIBusIDs is alone in group fakeIOMMUGroupBase+i, as a GPU behind
// an ACS-capable PCIe switch is.
const fakeIOMMUGroupBase = 20

// fakeBARs are the memory BARs of a fake GPU as the sysfs resource file
// lists them (start end flags): BAR0 16 MiB registers, BAR1 128 GiB and BAR3
// 32 MiB, 64-bit prefetchable (flags 0x14220c), as on an H100.
var fakeBARs = [][3]uint64{
	{0xa0000000, 0xa0ffffff, 0x40200},
	{0x200000000000, 0x201fffffffff, 0x14220c},
	{0, 0, 0},
	{0x202000000000, 0x202001ffffff, 0x14220c},
}

// addPCIGPU creates an NVIDIA GPU's PCI function under its PCIe root, with
// the attributes the kubelet plugin reads (vendor, device, class, numa_node,
// resource), its IOMMU group, and its driver link to the nvidia driver. On a
// root that has the function already (Fake again on a live node) its binding
// and driver_override stay as they are.
func (r Root) addPCIGPU(index int, busID, deviceID string, numa int) error {
	busID = strings.ToLower(busID)
	root, err := PCIeRoot(busID)
	if err != nil {
		return err
	}
	device := filepath.Join("/sys/devices", root, busID)
	_, statErr := os.Stat(r.Path(device))
	fresh := errors.Is(statErr, fs.ErrNotExist)
	if err := os.MkdirAll(r.Path(device), 0o755); err != nil {
		return err
	}
	if deviceID == "" {
		deviceID = "0x0000"
	}
	var resource strings.Builder
	for _, bar := range fakeBARs {
		fmt.Fprintf(&resource, "0x%016x 0x%016x 0x%016x\n", bar[0], bar[1], bar[2])
	}
	files := map[string]string{
		"vendor":    NvidiaPCIVendor,
		"device":    deviceID,
		"class":     "0x030200",
		"numa_node": fmt.Sprint(numa),
		"resource":  resource.String(),
	}
	if fresh {
		files["driver_override"] = "(null)"
	}
	for name, content := range files {
		if err := writeFile(r.Path(device+"/"+name), strings.TrimSuffix(content, "\n")+"\n"); err != nil {
			return err
		}
	}
	group := fmt.Sprint(fakeIOMMUGroupBase + index)
	groupDir := IOMMUGroupsDir + "/" + group
	if err := os.MkdirAll(r.Path(groupDir+"/devices"), 0o755); err != nil {
		return err
	}
	if err := r.relink(groupDir+"/devices/"+busID, device); err != nil {
		return err
	}
	if err := r.relink(device+"/iommu_group", groupDir); err != nil {
		return err
	}
	if fresh {
		if err := r.relink(device+"/driver", PCIDriversDir+"/"+NvidiaPCIDriver); err != nil {
			return err
		}
	}
	return r.relink(PCIDevicePath(busID), device)
}

// addPCIDrivers creates the nvidia and vfio-pci drivers' bind and unbind
// files, the loaded vfio_pci module and the VFIO container device.
func (r Root) addPCIDrivers() error {
	for _, drv := range []string{NvidiaPCIDriver, VFIOPCIDriver} {
		for _, f := range []string{"bind", "unbind"} {
			if err := writeFile(r.Path(PCIDriversDir+"/"+drv+"/"+f), ""); err != nil {
				return err
			}
		}
	}
	if err := os.MkdirAll(r.Path("/sys/module/vfio_pci"), 0o755); err != nil {
		return err
	}
	return writeFile(r.Path(VFIOContainerDevice), charDev(10, fakeVFIOContainerMinor))
}

// relink makes the host path link a relative symlink to the host path
// target, as sysfs links are.
func (r Root) relink(link, target string) error {
	rel, err := filepath.Rel(filepath.Dir(link), target)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(r.Path(link)), 0o755); err != nil {
		return err
	}
	if err := os.Remove(r.Path(link)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Symlink(rel, r.Path(link))
}

// FakeKernel plays the kernel's part in a fake root's PCI sysfs: a write to
// a function's driver_override, to a driver's bind or unbind file or to a
// function's driver/unbind changes the driver links and the VFIO device nodes
// as Linux does, with the kernel's errors (EBUSY binding a bound function,
// ENODEV binding a driver the override excludes or unbinding a function from
// a driver it is not bound to). Every other write goes to the file, which must
// exist, as in sysfs. It is safe for concurrent use in one process.
type FakeKernel struct {
	root Root
	mu   sync.Mutex
}

// FakeKernel returns the kernel of a fake root.
func (r Root) FakeKernel() (*FakeKernel, error) {
	if !r.IsFake() {
		return nil, fmt.Errorf("fake kernel: %s is not a fake host root", r.Dir())
	}
	return &FakeKernel{root: r}, nil
}

// WriteFile writes data to path, a path inside the root, as a process writes
// to sysfs.
func (k *FakeKernel) WriteFile(path string, data []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	host, err := k.root.HostPath(path)
	if err != nil {
		return err
	}
	value := strings.TrimSpace(string(data))
	wrap := func(err error) error {
		if err == nil {
			return nil
		}
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	parts := strings.Split(strings.TrimPrefix(host, "/"), "/")
	switch {
	case len(parts) == 6 && strings.HasPrefix(host, PCIDevicesDir+"/") && parts[5] == "driver_override":
		if value == "" {
			value = "(null)"
		}
		return wrap(writeExisting(path, value+"\n"))
	case len(parts) == 7 && strings.HasPrefix(host, PCIDevicesDir+"/") && parts[5] == "driver" && parts[6] == "unbind":
		drv, err := k.root.PCIDriver(parts[4])
		if err != nil || drv == "" {
			return wrap(syscall.ENOENT)
		}
		return wrap(k.unbind(parts[4], drv, value))
	case len(parts) == 6 && strings.HasPrefix(host, PCIDriversDir+"/") && parts[5] == "unbind":
		return wrap(k.unbind(value, parts[4], value))
	case len(parts) == 6 && strings.HasPrefix(host, PCIDriversDir+"/") && parts[5] == "bind":
		return wrap(k.bind(value, parts[4]))
	}
	return wrap(writeExisting(path, string(data)))
}

func writeExisting(path, content string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	return errors.Join(err, f.Close())
}

func (k *FakeKernel) unbind(busID, driver, written string) error {
	if written != busID {
		return syscall.ENODEV
	}
	current, err := k.root.PCIDriver(busID)
	if err != nil || current != driver {
		return syscall.ENODEV
	}
	if err := os.Remove(k.root.Path(PCIDevicePath(busID) + "/driver")); err != nil {
		return err
	}
	if driver == VFIOPCIDriver {
		return k.removeVFIONodes(busID)
	}
	return nil
}

func (k *FakeKernel) bind(busID, driver string) error {
	if _, err := os.Stat(k.root.Path(PCIDevicePath(busID))); err != nil {
		return syscall.ENODEV
	}
	if _, err := os.Stat(k.root.Path(PCIDriversDir + "/" + driver)); err != nil {
		return syscall.ENOENT
	}
	current, err := k.root.PCIDriver(busID)
	if err != nil {
		return err
	}
	if current != "" {
		return syscall.EBUSY
	}
	override, err := k.root.ReadSysfs(PCIDevicePath(busID) + "/driver_override")
	if err != nil {
		return err
	}
	if override != "(null)" && override != "" && override != driver {
		return syscall.ENODEV
	}
	device, err := filepath.EvalSymlinks(k.root.Path(PCIDevicePath(busID)))
	if err != nil {
		return err
	}
	deviceHost, err := k.root.HostPath(device)
	if err != nil {
		return err
	}
	if err := k.root.relink(deviceHost+"/driver", PCIDriversDir+"/"+driver); err != nil {
		return err
	}
	if driver == VFIOPCIDriver {
		return k.addVFIONodes(busID, deviceHost)
	}
	return nil
}

// addVFIONodes creates what vfio-pci creates for a bound function: its
// group's /dev/vfio/<group> and its iommufd cdev vfio<N> (sysfs vfio-dev and
// /dev/vfio/devices), N the group number.
func (k *FakeKernel) addVFIONodes(busID, deviceHost string) error {
	group, err := k.root.PCIIOMMUGroup(busID)
	if err != nil {
		return err
	}
	if group < 0 {
		return nil
	}
	cdev := fmt.Sprintf("vfio%d", group)
	if err := os.MkdirAll(k.root.Path(deviceHost+"/vfio-dev/"+cdev), 0o755); err != nil {
		return err
	}
	if err := writeFile(k.root.Path(VFIOCdevDir+"/"+cdev), charDev(fakeVFIOCdevMajor, uint32(group))); err != nil {
		return err
	}
	return writeFile(k.root.Path(fmt.Sprintf("%s/%d", VFIODir, group)), charDev(fakeVFIOMajor, uint32(group)))
}

func (k *FakeKernel) removeVFIONodes(busID string) error {
	group, err := k.root.PCIIOMMUGroup(busID)
	if err != nil || group < 0 {
		return err
	}
	cdev := fmt.Sprintf("vfio%d", group)
	for _, p := range []string{PCIDevicePath(busID) + "/vfio-dev", VFIOCdevDir + "/" + cdev, fmt.Sprintf("%s/%d", VFIODir, group)} {
		if err := os.RemoveAll(k.root.Path(p)); err != nil {
			return err
		}
	}
	return nil
}
