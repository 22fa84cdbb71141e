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
	"os"
	"syscall"
	"testing"
)

func fakePCIRoot(t *testing.T) (Root, *FakeKernel) {
	t.Helper()
	r, err := Fake(t.TempDir(), FakeSpec{NodeName: "n", GPUs: 2, PCIBusIDs: []string{"0000:1b:00.0", "0000:43:00.0"}, PCIDeviceID: "0x2330", NUMANodes: []int{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	k, err := r.FakeKernel()
	if err != nil {
		t.Fatal(err)
	}
	return r, k
}

// write is a write to a host path of the root through the fake kernel.
func write(k *FakeKernel, r Root, hostPath, data string) error {
	return k.WriteFile(r.Path(hostPath), []byte(data))
}

func mustDriver(t *testing.T, r Root, bus, want string) {
	t.Helper()
	got, err := r.PCIDriver(bus)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("%s driver %q, want %q", bus, got, want)
	}
}

// TestFakeKernelMovesAGPUToVFIOAndBack: the sequence the GPU plugin writes (override, unbind, bind; and back:
// clear the override, unbind, bind) moves the driver link and creates and removes the group's /dev/vfio node.
func TestFakeKernelMovesAGPUToVFIOAndBack(t *testing.T) {
	r, k := fakePCIRoot(t)
	const bus = "0000:43:00.0"
	mustDriver(t, r, bus, NvidiaPCIDriver)
	if g, err := r.PCIIOMMUGroup(bus); err != nil || g != 21 {
		t.Fatalf("IOMMU group %d, %v; want 21", g, err)
	}
	for _, step := range []struct{ path, data string }{
		{PCIDevicePath(bus) + "/driver_override", VFIOPCIDriver},
		{PCIDevicePath(bus) + "/driver/unbind", bus},
		{PCIDriversDir + "/" + VFIOPCIDriver + "/bind", bus},
	} {
		if err := write(k, r, step.path, step.data); err != nil {
			t.Fatalf("write %s: %v", step.path, err)
		}
	}
	mustDriver(t, r, bus, VFIOPCIDriver)
	for _, p := range []string{"/dev/vfio/21", "/dev/vfio/devices/vfio21", PCIDevicePath(bus) + "/vfio-dev/vfio21"} {
		if _, err := os.Stat(r.Path(p)); err != nil {
			t.Errorf("bound to vfio-pci: %s: %v", p, err)
		}
	}
	if major, minor, err := r.CharDeviceNumbers("/dev/vfio/21"); err != nil || major != fakeVFIOMajor || minor != 21 {
		t.Errorf("/dev/vfio/21 is %d:%d (%v), want %d:21", major, minor, err, fakeVFIOMajor)
	}
	mustDriver(t, r, "0000:1b:00.0", NvidiaPCIDriver)

	for _, step := range []struct{ path, data string }{
		{PCIDevicePath(bus) + "/driver_override", "\n"},
		{PCIDriversDir + "/" + VFIOPCIDriver + "/unbind", bus},
		{PCIDriversDir + "/" + NvidiaPCIDriver + "/bind", bus},
	} {
		if err := write(k, r, step.path, step.data); err != nil {
			t.Fatalf("write %s: %v", step.path, err)
		}
	}
	mustDriver(t, r, bus, NvidiaPCIDriver)
	if _, err := os.Stat(r.Path("/dev/vfio/21")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("back on nvidia: /dev/vfio/21: %v, want gone", err)
	}
	if o, _ := r.ReadSysfs(PCIDevicePath(bus) + "/driver_override"); o != "(null)" {
		t.Errorf("driver_override %q, want (null)", o)
	}
}

// TestFakeKernelRefusesWhatLinuxRefuses: binding a bound function is EBUSY; binding a driver the override
// excludes, or unbinding from a driver the function is not bound to, is ENODEV; and nothing changes.
func TestFakeKernelRefusesWhatLinuxRefuses(t *testing.T) {
	const bus = "0000:1b:00.0"
	cases := map[string]struct {
		setup  [][2]string
		path   string
		data   string
		want   error
		driver string
	}{
		"binding vfio-pci while nvidia holds the GPU": {
			path: PCIDriversDir + "/" + VFIOPCIDriver + "/bind", data: bus, want: syscall.EBUSY, driver: NvidiaPCIDriver,
		},
		"unbinding from vfio-pci a GPU on nvidia": {
			path: PCIDriversDir + "/" + VFIOPCIDriver + "/unbind", data: bus, want: syscall.ENODEV, driver: NvidiaPCIDriver,
		},
		"binding nvidia while the override names vfio-pci": {
			setup: [][2]string{{PCIDevicePath(bus) + "/driver_override", VFIOPCIDriver}, {PCIDevicePath(bus) + "/driver/unbind", bus}},
			path:  PCIDriversDir + "/" + NvidiaPCIDriver + "/bind", data: bus, want: syscall.ENODEV, driver: "",
		},
		"unbinding a GPU on no driver": {
			setup: [][2]string{{PCIDevicePath(bus) + "/driver/unbind", bus}},
			path:  PCIDevicePath(bus) + "/driver/unbind", data: bus, want: syscall.ENOENT, driver: "",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, k := fakePCIRoot(t)
			for _, s := range tc.setup {
				if err := write(k, r, s[0], s[1]); err != nil {
					t.Fatalf("setup %s: %v", s[0], err)
				}
			}
			if err := write(k, r, tc.path, tc.data); !errors.Is(err, tc.want) {
				t.Errorf("write %s: %v, want %v", tc.path, err, tc.want)
			}
			mustDriver(t, r, bus, tc.driver)
		})
	}
}
