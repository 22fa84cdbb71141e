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
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

// The HGX H100 profile's GPUs: index i has bus ID hgxBusIDs[i] and, on a fake root, IOMMU group 20+i.
var hgxBusIDs = []string{"0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0", "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"}

const vfioAPIConfig = `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"VfioDeviceConfig","iommu":{"backendPolicy":"LegacyOnly","enableAPIDevice":true}}`

// pciState is a PCI function's driver and driver_override on the node.
func pciState(t *testing.T, e *testNodeEnv, busID string) (string, string) {
	t.Helper()
	root := hostroot.New(e.hostRoot)
	drv, err := root.PCIDriver(busID)
	if err != nil {
		t.Fatal(err)
	}
	override, err := root.ReadSysfs(hostroot.PCIDevicePath(busID) + "/driver_override")
	if err != nil {
		t.Fatal(err)
	}
	return drv, override
}

func nvmlCount(t *testing.T, e *testNodeEnv) int {
	t.Helper()
	n, r := e.lib.DeviceGetCount()
	if r != nvml.SUCCESS {
		t.Fatalf("device count: %v", r)
	}
	return n
}

func deviceNames(d *Driver) []string {
	var names []string
	for _, dev := range allDevices(d.Resources()) {
		names = append(names, dev.Name)
	}
	return names
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestPassthroughPublishesVfioDevicesWithNVIDIAsAttributes(t *testing.T) {
	d := newTestNodeEnv(t, "hgx-h100-8", withPassthrough()).mustDriver()
	byName := map[string]resourceapi.Device{}
	for _, dev := range allDevices(d.Resources()) {
		byName[dev.Name] = dev
	}
	vfio, ok := byName["gpu-vfio-2"]
	if !ok {
		t.Fatalf("no gpu-vfio-2 among %v", deviceNames(d))
	}
	got := map[string]string{}
	for _, a := range []resourceapi.QualifiedName{attrType, attrUUID, attrDeviceID, attrVendorID, attrProductName, "resource.kubernetes.io/pciBusID"} {
		got[string(a)], _ = strAttr(vfio, a)
	}
	want := map[string]string{
		"type": "vfio", "uuid": vfioUUID("0000:52:00.0"), "deviceID": "0x2330", "vendorID": "0x10de",
		"productName": "GH100 [H100 SXM5 80GB]", "resource.kubernetes.io/pciBusID": "0000:52:00.0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gpu-vfio-2 attributes (-want +got):\n%s", diff)
	}
	if v := vfio.Attributes[attrIOMMUFDEnabled].BoolValue; v == nil || *v {
		t.Errorf("iommuFDEnabled = %v, want false (the fake host has no /dev/iommu)", v)
	}
	if c := vfio.Capacity[capAddressableMemory].Value; c.Value() != (128<<30)+(32<<20) {
		t.Errorf("addressableMemory = %s, want the 64-bit BARs' 128Gi+32Mi", c.String())
	}
	// The GPU and its vfio device take the same counter.
	gpu := byName["gpu-2"]
	if len(gpu.ConsumesCounters) != 1 || len(vfio.ConsumesCounters) != 1 || gpu.ConsumesCounters[0].CounterSet != vfio.ConsumesCounters[0].CounterSet {
		t.Errorf("gpu-2 consumes %v and gpu-vfio-2 %v: want one shared counter set", gpu.ConsumesCounters, vfio.ConsumesCounters)
	}
}

func TestPassthroughGateOffPublishesNoVfioDevices(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver()
	for _, dev := range allDevices(d.Resources()) {
		if strings.HasPrefix(dev.Name, vfioDeviceNamePrefix) || len(dev.ConsumesCounters) > 0 {
			t.Errorf("gate off: device %s published (counters %v)", dev.Name, dev.ConsumesCounters)
		}
	}
}

// TestPassthroughPrepareAndUnprepare: prepare moves the GPU to vfio-pci through sysfs, the CDI spec has its group's
// node and the IOMMU API device, NVML loses the GPU and only its vfio device is published; unprepare gives it back.
func TestPassthroughPrepareAndUnprepare(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8", withPassthrough())
	d := e.mustDriver()
	claim := utiltesting.MakeResourceClaim("vm", "default").UID("uid-vm").Device("gpu", testDriver, testNode, "gpu-vfio-2").
		Config(resourceapi.AllocationConfigSourceClaim, testDriver, vfioAPIConfig).Obj()
	ids, err := prepareOne(t, d, claim)
	if err != nil {
		t.Fatal(err)
	}
	if drv, override := pciState(t, e, "0000:52:00.0"); drv != hostroot.VFIOPCIDriver || override != hostroot.VFIOPCIDriver {
		t.Errorf("after prepare: driver %q, driver_override %q, want vfio-pci twice", drv, override)
	}
	if !exists(hostroot.New(e.hostRoot).Path("/dev/vfio/22")) {
		t.Error("after prepare: no /dev/vfio/22")
	}
	view, err := resolveCDIView(e.cdiRoot, ids)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/dev/vfio/22", "/dev/vfio/vfio"}; !slices.Equal(view.DeviceNodes, want) {
		t.Errorf("CDI device nodes %v, want %v (no NVIDIA device nodes for a VM)", view.DeviceNodes, want)
	}
	if len(view.Mounts) != 0 {
		t.Errorf("CDI mounts %v, want none: the guest has its own driver", view.Mounts)
	}
	if n := nvmlCount(t, e); n != 7 {
		t.Errorf("NVML sees %d GPUs while one is on vfio-pci, want 7", n)
	}
	names := deviceNames(d)
	if slices.Contains(names, "gpu-2") || !slices.Contains(names, "gpu-vfio-2") {
		t.Errorf("published while in passthrough: %v; want gpu-vfio-2 without gpu-2", names)
	}

	// A restarted plugin finds the GPU in passthrough and keeps it there.
	d = e.mustDriver()
	if drv, _ := pciState(t, e, "0000:52:00.0"); drv != hostroot.VFIOPCIDriver {
		t.Errorf("after a restart: driver %q, want vfio-pci", drv)
	}

	if err := unprepare(t, d, "uid-vm")["uid-vm"]; err != nil {
		t.Fatal(err)
	}
	if drv, override := pciState(t, e, "0000:52:00.0"); drv != hostroot.NvidiaPCIDriver || override != "(null)" {
		t.Errorf("after unprepare: driver %q, driver_override %q, want nvidia and (null)", drv, override)
	}
	if exists(hostroot.New(e.hostRoot).Path("/dev/vfio/22")) {
		t.Error("after unprepare: /dev/vfio/22 still there")
	}
	if n := nvmlCount(t, e); n != 8 {
		t.Errorf("NVML sees %d GPUs after unprepare, want 8", n)
	}
	if names := deviceNames(d); !slices.Contains(names, "gpu-2") {
		t.Errorf("gpu-2 not published again after unprepare: %v", names)
	}
}

// TestPassthroughRefusesAGPUHeldAsAGPU: an allocation of a GPU's vfio device while a claim holds the GPU itself (an
// allocation made under other settings) fails at prepare, and the GPU stays on nvidia.
func TestPassthroughRefusesAGPUHeldAsAGPU(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8", withPassthrough())
	d := e.mustDriver()
	if _, err := prepareOne(t, d, utiltesting.MakeResourceClaim("gpu", "default").UID("uid-gpu").Device("gpu", testDriver, testNode, "gpu-2").Obj()); err != nil {
		t.Fatal(err)
	}
	_, err := prepareOne(t, d, utiltesting.MakeResourceClaim("vm", "default").UID("uid-vm").Device("gpu", testDriver, testNode, "gpu-vfio-2").Obj())
	if err == nil || !strings.Contains(err.Error(), "same GPU") {
		t.Fatalf("prepare of gpu-vfio-2 while gpu-2 is held: %v, want a conflict naming the same GPU", err)
	}
	if drv, _ := pciState(t, e, "0000:52:00.0"); drv != hostroot.NvidiaPCIDriver {
		t.Errorf("driver %q after the refused prepare, want nvidia", drv)
	}
}

func TestVfioDeviceConfigIsCheckedAtPrepare(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8", withPassthrough())
	d := e.mustDriver()
	cases := map[string]struct {
		cfg     string
		wantErr string
	}{
		"an unknown backend policy names the field and the allowed values": {
			cfg:     `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"VfioDeviceConfig","iommu":{"backendPolicy":"Iommufd"}}`,
			wantErr: `iommu.backendPolicy: Unsupported value: "Iommufd": supported values: "LegacyOnly", "PreferIommuFD"`,
		},
		"a misspelled field is refused": {
			cfg:     `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"VfioDeviceConfig","iommu":{"enableApiDevice":true}}`,
			wantErr: `unknown field "iommu.enableApiDevice"`,
		},
		"a GpuConfig cannot configure a vfio device": {
			cfg:     tsLong,
			wantErr: "a GpuConfig cannot configure a vfio device; use a VfioDeviceConfig",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			claim := utiltesting.MakeResourceClaim("vm", "default").UID("uid-bad").Device("gpu", testDriver, testNode, "gpu-vfio-0").
				Config(resourceapi.AllocationConfigSourceClaim, testDriver, tc.cfg).Obj()
			_, err := prepareOne(t, d, claim)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("prepare: %v, want an error containing %q", err, tc.wantErr)
			}
			if drv, _ := pciState(t, e, hgxBusIDs[0]); drv != hostroot.NvidiaPCIDriver {
				t.Errorf("driver %q after a refused config, want nvidia: nothing half-applied", drv)
			}
		})
	}
}

// TestStartupReturnsGPUsNoClaimHolds: a GPU the plugin moved to vfio-pci (driver_override vfio-pci) whose claim the
// checkpoint no longer records (a discarded checkpoint of another boot) goes back to nvidia at start-up and is
// published again; a GPU bound to vfio-pci without the override (an admin's) is left alone.
func TestStartupReturnsGPUsNoClaimHolds(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8", withPassthrough())
	d := e.mustDriver()
	if _, err := prepareOne(t, d, utiltesting.MakeResourceClaim("vm", "default").UID("uid-vm").Device("gpu", testDriver, testNode, "gpu-vfio-2").Obj()); err != nil {
		t.Fatal(err)
	}
	root := hostroot.New(e.hostRoot)
	k, err := root.FakeKernel()
	if err != nil {
		t.Fatal(err)
	}
	admins := hgxBusIDs[5]
	if err := k.WriteFile(root.Path(hostroot.PCIDevicePath(admins)+"/driver/unbind"), []byte(admins)); err != nil {
		t.Fatal(err)
	}
	if err := k.WriteFile(root.Path(hostroot.PCIDriversDir+"/vfio-pci/bind"), []byte(admins)); err != nil {
		t.Fatal(err)
	}

	d = e.mustDriver(e.withBootID("boot-2"))
	if drv, override := pciState(t, e, hgxBusIDs[2]); drv != hostroot.NvidiaPCIDriver || override != "(null)" {
		t.Errorf("the plugin's GPU after a start without its claim: driver %q, override %q; want nvidia, (null)", drv, override)
	}
	if drv, _ := pciState(t, e, admins); drv != hostroot.VFIOPCIDriver {
		t.Errorf("the admin's GPU: driver %q, want vfio-pci (left alone)", drv)
	}
	names := deviceNames(d)
	if !slices.Contains(names, "gpu-2") || slices.Contains(names, "gpu-5") {
		t.Errorf("published %v: want gpu-2 (back on nvidia) and no gpu-5 (on vfio-pci)", names)
	}
}
