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
	"crypto/sha1"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// FakeMarker is the file, relative to the root, that marks a fake host root:
// device entries there are regular files, not device nodes.
const FakeMarker = "/.fake-hostroot"

// Character device majors of the fake /proc/devices: the kernel's usual
// ones and the NVIDIA driver's (mockDriverMajors).
var defaultMajors = append([]charMajor{
	{1, "mem"},
	{4, "tty"},
	{5, "/dev/tty"},
	{10, "misc"},
	{fakeVFIOCdevMajor, "vfio-dev"},
	{fakeVFIOMajor, "vfio"},
}, mockDriverMajors...)

// MIG capability minors enumerated in the fake mig-minors file, as the
// driver does: per GPU, 15 GPU instances with 8 compute instances each.
const (
	migGIsPerGPU = 15
	migCIsPerGI  = 8
)

// FakeSpec describes a fake host root.
type FakeSpec struct {
	// NodeName seeds the boot ID.
	NodeName string
	// BootID overrides the derived boot ID.
	BootID string
	// GPUs is the number of /dev/nvidia<N> entries (minors 0..GPUs-1).
	GPUs int
	// ImexChannels is the number of channel entries created up front
	// (channel0..channel<N-1>); components may create more with
	// CreateImexChannel.
	ImexChannels int
	// DriverVersion is written to /proc/driver/nvidia/version and names the
	// fake driver's user-space files (FakeDriverFiles).
	DriverVersion string
	// PCIBusIDs are the GPUs' bus IDs ("0000:1b:00.0"); each gets a sysfs
	// device under its PCIe root (PCIeRoot) and the /sys/bus/pci/devices
	// symlink that k8s.io/dynamic-resource-allocation/deviceattribute reads,
	// with the sysfs attributes of an NVIDIA GPU, its own IOMMU group and a
	// driver link to the nvidia driver (fake_pci.go).
	PCIBusIDs []string
	// PCIDeviceID is the GPUs' PCI device ID ("0x2330"); "" writes 0x0000.
	PCIDeviceID string
	// NUMANodes are the GPUs' NUMA nodes by index; missing ones are -1.
	NUMANodes []int
}

// IsFake reports whether the root was made by Fake.
func (r Root) IsFake() bool {
	_, err := os.Stat(r.Path(FakeMarker))
	return err == nil
}

// Fake populates dir as a node's host root and returns it. It is
// idempotent: existing channel entries are kept, the boot ID is rewritten.
func Fake(dir string, spec FakeSpec) (Root, error) {
	if dir == "" || filepath.Clean(dir) == "/" {
		return Root{}, fmt.Errorf("fake host root: dir %q: want a directory other than /", dir)
	}
	if spec.GPUs < 0 || spec.ImexChannels < 0 || spec.ImexChannels > MaxImexChannels {
		return Root{}, fmt.Errorf("fake host root: gpus %d, imexChannels %d: want gpus >= 0 and imexChannels 0..%d", spec.GPUs, spec.ImexChannels, MaxImexChannels)
	}
	r := New(dir)
	bootID := spec.BootID
	if bootID == "" {
		bootID = derivedBootID(spec.NodeName)
	}
	driver := spec.DriverVersion
	if driver == "" {
		driver = "580.95.05"
	}
	var devices strings.Builder
	devices.WriteString("Character devices:\n")
	for _, m := range defaultMajors {
		fmt.Fprintf(&devices, "%3d %s\n", m.major, m.name)
	}
	devices.WriteString("\nBlock devices:\n  8 sd\n259 blkext\n")

	files := map[string]string{
		FakeMarker:                            "fake host root\n",
		ProcDevices:                           devices.String(),
		BootIDFile:                            bootID + "\n",
		DriverVersionFile:                     fmt.Sprintf("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  (dvs-builder@U22-I3-AE18-23-3)\nGCC version:  gcc version 12.3.0\n", driver),
		MIGMinorsFile:                         migMinors(spec.GPUs),
		CapabilitiesDir + "/mig/config":       capAccess(1),
		CapabilitiesDir + "/mig/monitor":      capAccess(2),
		CapabilitiesDir + "/fabric-imex-mgmt": capAccess(imexMgmtMinor),
		"/dev/nvidiactl":                      charDev(195, 255),
		"/dev/nvidia-uvm":                     charDev(238, 0),
		"/dev/nvidia-uvm-tools":               charDev(238, 1),
		NvidiaCapDevice(1):                    charDev(237, 1),
		NvidiaCapDevice(2):                    charDev(237, 2),
		NvidiaCapDevice(imexMgmtMinor):        charDev(237, imexMgmtMinor),
	}
	for i := 0; i < spec.GPUs; i++ {
		files[fmt.Sprintf("/dev/nvidia%d", i)] = charDev(195, uint32(i))
	}
	for host, content := range files {
		if err := writeFile(r.Path(host), content); err != nil {
			return Root{}, fmt.Errorf("fake host root: %w", err)
		}
	}
	if err := FakeDriverFiles(dir, driver); err != nil {
		return Root{}, fmt.Errorf("fake host root: %w", err)
	}
	if err := os.MkdirAll(r.Path(ImexChannelDir), 0o755); err != nil {
		return Root{}, fmt.Errorf("fake host root: %w", err)
	}
	if err := r.addPCIDrivers(); err != nil {
		return Root{}, fmt.Errorf("fake host root: %w", err)
	}
	for i, busID := range spec.PCIBusIDs {
		numa := -1
		if i < len(spec.NUMANodes) {
			numa = spec.NUMANodes[i]
		}
		if err := r.addPCIGPU(i, busID, spec.PCIDeviceID, numa); err != nil {
			return Root{}, fmt.Errorf("fake host root: %w", err)
		}
	}
	for n := 0; n < spec.ImexChannels; n++ {
		if _, err := r.CreateImexChannel(n); err != nil {
			return Root{}, fmt.Errorf("fake host root: %w", err)
		}
	}
	return r, nil
}

// imexMgmtMinor is the fake's minor of the fabric-imex-mgmt capability.
const imexMgmtMinor = 4095

func capAccess(minor uint32) string {
	return fmt.Sprintf("DeviceFileMinor: %d\nDeviceFileMode: 256\nDeviceFileModify: 1\n", minor)
}

// charDev is the content of a fake device entry.
func charDev(major, minor uint32) string {
	return fmt.Sprintf("c %d:%d\n", major, minor)
}

func migMinors(gpus int) string {
	var b strings.Builder
	b.WriteString("config 1\nmonitor 2\n")
	minor := 3
	for g := 0; g < gpus; g++ {
		for gi := 0; gi < migGIsPerGPU; gi++ {
			fmt.Fprintf(&b, "gpu%d/gi%d/access %d\n", g, gi, minor)
			minor++
			for ci := 0; ci < migCIsPerGI; ci++ {
				fmt.Fprintf(&b, "gpu%d/gi%d/ci%d/access %d\n", g, gi, ci, minor)
				minor++
			}
		}
	}
	return b.String()
}

func derivedBootID(node string) string {
	sum := sha1.Sum([]byte("boot\x00" + node))
	return fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}

func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// SetBootID rewrites the boot ID of a fake root, as a reboot would.
func (r Root) SetBootID(id string) error {
	if !r.IsFake() {
		return fmt.Errorf("set boot ID: %s is not a fake host root", r.Dir())
	}
	return writeFile(r.Path(BootIDFile), id+"\n")
}

// AddMIGDevice creates, on a fake root, the capability files the driver
// creates with a MIG device (GPU instance gi, compute instance ci on the GPU
// with minor gpuMinor), with the minors of the mig-minors table, and their
// /dev/nvidia-caps entries.
func (r Root) AddMIGDevice(gpuMinor, gi, ci int) error {
	if !r.IsFake() {
		return fmt.Errorf("add MIG device: %s is not a fake host root; the driver owns these files", r.Dir())
	}
	if gi < 0 || gi >= migGIsPerGPU || ci < 0 || ci >= migCIsPerGI {
		return fmt.Errorf("add MIG device: gi %d, ci %d: want gi 0..%d and ci 0..%d", gi, ci, migGIsPerGPU-1, migCIsPerGI-1)
	}
	minors, err := r.MIGMinors()
	if err != nil {
		return err
	}
	giKey := fmt.Sprintf("gpu%d/gi%d/access", gpuMinor, gi)
	ciKey := fmt.Sprintf("gpu%d/gi%d/ci%d/access", gpuMinor, gi, ci)
	giMinor, ok1 := minors[giKey]
	ciMinor, ok2 := minors[ciKey]
	if !ok1 || !ok2 {
		return fmt.Errorf("add MIG device: GPU minor %d is not in %s", gpuMinor, MIGMinorsFile)
	}
	giCap, ciCap := MIGCapabilities(gpuMinor, gi, ci)
	for capability, minor := range map[string]uint32{giCap: giMinor, ciCap: ciMinor} {
		if err := writeFile(r.Path(CapabilitiesDir+"/"+capability), capAccess(minor)); err != nil {
			return fmt.Errorf("add MIG device: %w", err)
		}
		if err := writeFile(r.Path(NvidiaCapDevice(minor)), charDev(237, minor)); err != nil {
			return fmt.Errorf("add MIG device: %w", err)
		}
	}
	return nil
}

// RemoveMIGDevice removes what AddMIGDevice created for the compute
// instance (the GPU instance's files stay while it may have others).
func (r Root) RemoveMIGDevice(gpuMinor, gi, ci int) error {
	if !r.IsFake() {
		return fmt.Errorf("remove MIG device: %s is not a fake host root", r.Dir())
	}
	_, ciCap := MIGCapabilities(gpuMinor, gi, ci)
	err := os.RemoveAll(filepath.Dir(r.Path(CapabilitiesDir + "/" + ciCap)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove MIG device: %w", err)
	}
	return nil
}

// PCIeRoot is the PCIe root complex ("pci0000:10") a fake root places a bus
// ID ("0000:1b:00.0") under: the bus's domain, and its bus number rounded
// down to a multiple of 16, so neighboring GPUs share a root as GPUs behind
// one PCIe switch do.
func PCIeRoot(busID string) (string, error) {
	var domain, bus, dev, fn uint32
	if _, err := fmt.Sscanf(busID, "%x:%x:%x.%x", &domain, &bus, &dev, &fn); err != nil {
		return "", fmt.Errorf("PCI bus ID %q: want domain:bus:device.function: %w", busID, err)
	}
	return fmt.Sprintf("pci%04x:%02x", domain, bus&0xf0), nil
}
