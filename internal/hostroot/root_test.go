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
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
	"k8s.io/dynamic-resource-allocation/deviceattribute"
)

func TestPathResolvesUnderTheRoot(t *testing.T) {
	cases := map[string]struct {
		root, host, want string
	}{
		"the real root keeps host paths":          {"/", "/dev/nvidia0", "/dev/nvidia0"},
		"the zero root is the real root":          {"", "/proc/devices", "/proc/devices"},
		"a fake root prefixes them":               {"/tmp/node-a", "/dev/nvidia0", "/tmp/node-a/dev/nvidia0"},
		"a relative host path is taken as rooted": {"/tmp/node-a", "proc/devices", "/tmp/node-a/proc/devices"},
		"dot-dot cannot escape the root":          {"/tmp/node-a", "/../../etc/passwd", "/tmp/node-a/etc/passwd"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := New(tc.root).Path(tc.host); got != tc.want {
				t.Errorf("Path(%q) = %q, want %q", tc.host, got, tc.want)
			}
		})
	}
	if (Root{}).Dir() != "/" || !(Root{}).IsHost() {
		t.Error("the zero Root is not the real host root")
	}
	back, err := New("/tmp/node-a").HostPath("/tmp/node-a/dev/nvidia-caps-imex-channels/channel3")
	if err != nil || back != "/dev/nvidia-caps-imex-channels/channel3" {
		t.Errorf("HostPath = %q, %v", back, err)
	}
	if _, err := New("/tmp/node-a").HostPath("/tmp/node-b/dev"); err == nil {
		t.Error("HostPath of a path outside the root succeeded")
	}
}

func TestAFakeRootLooksLikeAGPUNode(t *testing.T) {
	r, err := Fake(t.TempDir(), FakeSpec{NodeName: "node-a", GPUs: 4, ImexChannels: 3})
	if err != nil {
		t.Fatal(err)
	}
	major, err := r.ImexChannelMajor()
	if err != nil {
		t.Fatal(err)
	}
	channels, err := r.ImexChannels()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{0, 1, 2}, channels); diff != "" {
		t.Errorf("channels (-want +got):\n%s", diff)
	}
	gotMaj, gotMin, err := r.FakeDeviceNumbers("/dev/nvidia-caps-imex-channels/channel2")
	if err != nil || gotMaj != major || gotMin != 2 {
		t.Errorf("channel2 = %d:%d (%v), want %d:2", gotMaj, gotMin, err, major)
	}
	nv, err := r.CharDeviceMajor("nvidia")
	if err != nil || nv != 195 {
		t.Errorf("nvidia major = %d, %v; want 195", nv, err)
	}
	if _, _, err := r.FakeDeviceNumbers("/dev/nvidia3"); err != nil {
		t.Errorf("/dev/nvidia3: %v", err)
	}
	if _, err := os.Stat(r.Path("/dev/nvidia4")); err == nil {
		t.Error("/dev/nvidia4 exists on a 4-GPU node")
	}
	minors := map[string]uint32{}
	for _, c := range []string{"mig/config", "mig/monitor", "fabric-imex-mgmt"} {
		if minors[c], err = r.CapabilityMinor(c); err != nil {
			t.Errorf("capability %s: %v", c, err)
		}
	}
	if diff := cmp.Diff(map[string]uint32{"mig/config": 1, "mig/monitor": 2, "fabric-imex-mgmt": 4095}, minors); diff != "" {
		t.Errorf("capability minors (-want +got):\n%s", diff)
	}
	id1, err := r.BootID()
	if err != nil || len(id1) != 36 {
		t.Fatalf("BootID = %q, %v", id1, err)
	}
	other, _ := Fake(t.TempDir(), FakeSpec{NodeName: "node-b"})
	if id2, _ := other.BootID(); id2 == id1 {
		t.Error("two nodes share a boot ID")
	}
	if err := r.SetBootID("rebooted"); err != nil {
		t.Fatal(err)
	}
	if id, _ := r.BootID(); id != "rebooted" {
		t.Errorf("BootID after SetBootID = %q", id)
	}
}

func TestCreateImexChannelOnAFakeRoot(t *testing.T) {
	r, err := Fake(t.TempDir(), FakeSpec{NodeName: "node-a"})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		n           int
		wantCreated bool
		wantErr     bool
	}{
		"a new channel is created":      {n: 7, wantCreated: true},
		"an existing channel is kept":   {n: 7, wantCreated: false},
		"the last channel exists":       {n: MaxImexChannels - 1, wantCreated: true},
		"channel 2048 is out of range":  {n: MaxImexChannels, wantErr: true},
		"a negative channel is refused": {n: -1, wantErr: true},
	}
	for _, name := range []string{"a new channel is created", "an existing channel is kept", "the last channel exists", "channel 2048 is out of range", "a negative channel is refused"} {
		tc := cases[name]
		t.Run(name, func(t *testing.T) {
			created, err := r.CreateImexChannel(tc.n)
			if (err != nil) != tc.wantErr || created != tc.wantCreated {
				t.Errorf("CreateImexChannel(%d) = %v, %v; want created %v, error %v", tc.n, created, err, tc.wantCreated, tc.wantErr)
			}
		})
	}
	got, _ := r.ImexChannels()
	if diff := cmp.Diff([]int{7, MaxImexChannels - 1}, got); diff != "" {
		t.Errorf("channels (-want +got):\n%s", diff)
	}
}

func TestMIGCapabilitiesFollowTheMinorsTable(t *testing.T) {
	r, err := Fake(t.TempDir(), FakeSpec{NodeName: "node-a", GPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.AddMIGDevice(1, 2, 0); err != nil {
		t.Fatal(err)
	}
	giCap, ciCap := MIGCapabilities(1, 2, 0)
	giMinor, err1 := r.CapabilityMinor(giCap)
	ciMinor, err2 := r.CapabilityMinor(ciCap)
	if err1 != nil || err2 != nil {
		t.Fatalf("capability minors: %v, %v", err1, err2)
	}
	// gpu1 starts after config, monitor and gpu0's 15*(1+8) entries; gi2 after two GIs of 9.
	wantGI := uint32(3 + 15*9 + 2*9)
	if giMinor != wantGI || ciMinor != wantGI+1 {
		t.Errorf("minors = %d, %d; want %d, %d", giMinor, ciMinor, wantGI, wantGI+1)
	}
	if _, _, err := r.FakeDeviceNumbers(NvidiaCapDevice(ciMinor)); err != nil {
		t.Errorf("cap device: %v", err)
	}
	if err := r.RemoveMIGDevice(1, 2, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := r.CapabilityMinor(ciCap); !errors.Is(err, ErrNotFound) {
		t.Errorf("CapabilityMinor after removal = %v, want ErrNotFound", err)
	}
	if err := r.AddMIGDevice(5, 0, 0); err == nil {
		t.Error("AddMIGDevice on a GPU the node lacks succeeded")
	}
}

func TestReadersReportMissingFiles(t *testing.T) {
	r := New(t.TempDir())
	if _, err := r.ImexChannelMajor(); err == nil {
		t.Error("ImexChannelMajor on an empty root succeeded")
	}
	if _, err := r.BootID(); err == nil {
		t.Error("BootID on an empty root succeeded")
	}
	if ch, err := r.ImexChannels(); err != nil || ch != nil {
		t.Errorf("ImexChannels on an empty root = %v, %v; want none", ch, err)
	}
	if _, err := Fake("/", FakeSpec{}); err == nil {
		t.Error("Fake(\"/\") succeeded; it must never write to the real root")
	}
	procDevices := "Character devices:\n195 nvidia\n\nBlock devices:\n236 nvidia-caps-imex-channels\n"
	if err := os.MkdirAll(filepath.Join(r.Dir(), "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.Path(ProcDevices), []byte(procDevices), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ImexChannelMajor(); !errors.Is(err, ErrNotFound) {
		t.Errorf("a block device of that name was taken for the character device: %v", err)
	}
}

func TestAFakeRootResolvesPCIeRoots(t *testing.T) {
	r, err := Fake(t.TempDir(), FakeSpec{NodeName: "node-a", GPUs: 2, PCIBusIDs: []string{"0000:1b:00.0", "0019:01:00.0"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, id := range []string{"0000:1b:00.0", "0019:01:00.0"} {
		attr, err := deviceattribute.GetPCIeRootAttributeByPCIBusID(id, deviceattribute.WithFSFromRoot(r.Path("/sys")))
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		got[id] = *attr.Value.StringValue
	}
	want := map[string]string{"0000:1b:00.0": "pci0000:10", "0019:01:00.0": "pci0019:00"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PCIe roots (-want +got):\n%s", diff)
	}
}

func TestCreateImexChannelMakesACharacterDeviceOnARealRoot(t *testing.T) {
	// A real-looking root: /proc/devices but no fake marker.
	r := New(t.TempDir())
	if err := writeFile(r.Path(ProcDevices), "Character devices:\n195 nvidia\n236 nvidia-caps-imex-channels\n"); err != nil {
		t.Fatal(err)
	}
	expectChannelDevice(t, r, 5, 236)
}

// expectChannelDevice creates IMEX channel n on a real-looking root and checks
// that it is the character device major:n (skipped without CAP_MKNOD).
func expectChannelDevice(t *testing.T, r Root, n int, major uint32) {
	t.Helper()
	created, err := r.CreateImexChannel(n)
	if errors.Is(err, os.ErrPermission) {
		t.Skipf("mknod needs CAP_MKNOD: %v", err)
	}
	if err != nil || !created {
		t.Fatalf("CreateImexChannel(%d) = %v, %v", n, created, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(r.ImexChannelPath(n), &st); err != nil {
		t.Fatal(err)
	}
	got := []uint32{st.Mode & unix.S_IFMT, unix.Major(st.Rdev), unix.Minor(st.Rdev)}
	if diff := cmp.Diff([]uint32{unix.S_IFCHR, major, uint32(n)}, got); diff != "" {
		t.Errorf("channel%d (type, major, minor) (-want +got):\n%s", n, diff)
	}
}
