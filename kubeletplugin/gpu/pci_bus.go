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
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
)

// sysfsWriter writes a sysfs attribute: the kernel (os.WriteFile on a node),
// or a fake root's hostroot.FakeKernel, which reacts to the writes as the
// kernel does.
type sysfsWriter interface {
	WriteFile(path string, data []byte) error
}

type kernelWriter struct{}

func (kernelWriter) WriteFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}

// pciBus reads the NVIDIA GPUs' PCI functions from sysfs and moves them
// between drivers, through the kernel's interface: driver_override, the old
// driver's unbind and the new driver's bind.
type pciBus struct {
	root hostroot.Root
	w    sysfsWriter
}

// newPCIBus returns the bus of a host root; a fake root gets its fake kernel.
func newPCIBus(root hostroot.Root) (*pciBus, error) {
	if root.IsFake() {
		k, err := root.FakeKernel()
		if err != nil {
			return nil, err
		}
		return &pciBus{root: root, w: k}, nil
	}
	return &pciBus{root: root, w: kernelWriter{}}, nil
}

// PCIGPU is an NVIDIA GPU's PCI function, as sysfs shows it.
type PCIGPU struct {
	BusID    string
	VendorID string
	DeviceID string
	// NUMANode is -1 when unknown.
	NUMANode int
	// IOMMUGroup is -1 without an IOMMU.
	IOMMUGroup int
	// Driver is the bound driver ("nvidia", "vfio-pci"), "" for none.
	Driver string
	// AddressableMemory is the sum of its 64-bit memory BARs, bytes.
	AddressableMemory uint64
}

// nvidiaGPUs lists the NVIDIA display/3D controllers (class 0x03xxxx), by
// bus ID.
func (b *pciBus) nvidiaGPUs() ([]PCIGPU, error) {
	entries, err := os.ReadDir(b.root.Path(hostroot.PCIDevicesDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list PCI devices: %w", err)
	}
	var out []PCIGPU
	for _, e := range entries {
		busID := e.Name()
		dir := hostroot.PCIDevicePath(busID)
		vendor, err := b.root.ReadSysfs(dir + "/vendor")
		if err != nil || vendor != hostroot.NvidiaPCIVendor {
			continue
		}
		class, err := b.root.ReadSysfs(dir + "/class")
		if err != nil || !strings.HasPrefix(class, "0x03") {
			continue
		}
		g, err := b.function(busID)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b PCIGPU) int { return strings.Compare(a.BusID, b.BusID) })
	return out, nil
}

// function reads one PCI function.
func (b *pciBus) function(busID string) (PCIGPU, error) {
	dir := hostroot.PCIDevicePath(busID)
	g := PCIGPU{BusID: busID, NUMANode: -1}
	var err error
	if g.VendorID, err = b.root.ReadSysfs(dir + "/vendor"); err != nil {
		return PCIGPU{}, fmt.Errorf("PCI function %s: %w", busID, err)
	}
	g.DeviceID, _ = b.root.ReadSysfs(dir + "/device")
	if s, err := b.root.ReadSysfs(dir + "/numa_node"); err == nil {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			g.NUMANode = n
		}
	}
	if g.IOMMUGroup, err = b.root.PCIIOMMUGroup(busID); err != nil {
		return PCIGPU{}, err
	}
	if g.Driver, err = b.root.PCIDriver(busID); err != nil {
		return PCIGPU{}, err
	}
	g.AddressableMemory = addressableMemory(b.root.Path(dir + "/resource"))
	return g, nil
}

// addressableMemory sums the sizes of the 64-bit memory BARs of a sysfs
// resource file (lines "start end flags"), 0 when it cannot be read.
func addressableMemory(path string) uint64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	const memFlag, mem64Flag = 0x200, 0x100000
	var total uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var start, end, flags uint64
		if _, err := fmt.Sscanf(sc.Text(), "0x%x 0x%x 0x%x", &start, &end, &flags); err != nil {
			continue
		}
		if flags&memFlag != 0 && flags&mem64Flag != 0 && end > start {
			total += end - start + 1
		}
	}
	return total
}

// driverOverride returns the function's driver_override ("" for none).
func (b *pciBus) driverOverride(busID string) (string, error) {
	s, err := b.root.ReadSysfs(hostroot.PCIDevicePath(busID) + "/driver_override")
	if err != nil {
		return "", fmt.Errorf("PCI function %s: driver_override: %w", busID, err)
	}
	if s == "(null)" {
		return "", nil
	}
	return s, nil
}

// setDriverOverride restricts the function to driver ("" clears it).
func (b *pciBus) setDriverOverride(busID, driver string) error {
	if err := b.w.WriteFile(b.root.Path(hostroot.PCIDevicePath(busID)+"/driver_override"), []byte(driver+"\n")); err != nil {
		return fmt.Errorf("PCI function %s: set driver_override to %q: %w", busID, driver, err)
	}
	return nil
}

// unbind detaches the function from its driver.
func (b *pciBus) unbind(busID, driver string) error {
	path := b.root.Path(filepath.Join(hostroot.PCIDriversDir, driver, "unbind"))
	if err := b.w.WriteFile(path, []byte(busID)); err != nil {
		return fmt.Errorf("PCI function %s: unbind from %s: %w", busID, driver, err)
	}
	return nil
}

// bind attaches the function to driver.
func (b *pciBus) bind(busID, driver string) error {
	path := b.root.Path(filepath.Join(hostroot.PCIDriversDir, driver, "bind"))
	if err := b.w.WriteFile(path, []byte(busID)); err != nil {
		return fmt.Errorf("PCI function %s: bind to %s: %w", busID, driver, err)
	}
	return nil
}

// vfioGroupWait is how long prepare waits for udev to create a group's
// /dev/vfio node after the bind, and how often it looks.
const (
	vfioGroupWait     = 10 * time.Second
	vfioGroupInterval = 50 * time.Millisecond
)

// waitForPath waits until the host path exists in the root.
func (b *pciBus) waitForPath(ctx context.Context, hostPath string) error {
	deadline := time.Now().Add(vfioGroupWait)
	for {
		if _, err := os.Stat(b.root.Path(hostPath)); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear within %s of the bind to vfio-pci", hostPath, vfioGroupWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(vfioGroupInterval):
		}
	}
}

// iommuFDEnabled reports whether the host has iommufd (/dev/iommu).
func (b *pciBus) iommuFDEnabled() bool {
	_, err := os.Stat(b.root.Path(hostroot.IOMMUDevice))
	return err == nil
}

// vfioCdev returns the iommufd character device of a function bound to
// vfio-pci ("vfio3"), from its sysfs vfio-dev directory.
func (b *pciBus) vfioCdev(busID string) (string, error) {
	entries, err := os.ReadDir(b.root.Path(hostroot.PCIDevicePath(busID) + "/vfio-dev"))
	if err != nil {
		return "", fmt.Errorf("PCI function %s: no iommufd device: %w", busID, err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "vfio") {
			return e.Name(), nil
		}
	}
	return "", fmt.Errorf("PCI function %s: no iommufd device in vfio-dev", busID)
}
