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
	"strings"
	"testing"
)

// kindProcDevices is the character-device part of a kind node's /proc/devices
// (the host kernel's, no NVIDIA driver loaded).
const kindProcDevices = "Character devices:\n  1 mem\n  4 tty\n 10 misc\n128 ptm\n245 hidraw\n254 ndctl\n\nBlock devices:\n  7 loop\n"

func TestAMockDriverRootStandsInForTheDriversDevicesTheKernelLacks(t *testing.T) {
	cases := map[string]struct {
		procDevices string
		mock        bool
		device      string
		want        uint32
		wantErr     string
	}{
		"a kind node's kernel has no IMEX channels: the mock driver's major": {
			procDevices: kindProcDevices, mock: true, device: ImexChannelDeviceName, want: 236,
		},
		"and no nvidia-caps": {
			procDevices: kindProcDevices, mock: true, device: "nvidia-caps", want: 237,
		},
		"a device the kernel lists keeps the kernel's major": {
			procDevices: kindProcDevices, mock: true, device: "misc", want: 10,
		},
		"a driver loaded under the mock keeps its own majors": {
			procDevices: "Character devices:\n195 nvidia\n509 nvidia-caps-imex-channels\n", mock: true, device: ImexChannelDeviceName, want: 509,
		},
		"a mock major the kernel gave another device is refused, naming both": {
			procDevices: "Character devices:\n236 hidraw\n", mock: true, device: ImexChannelDeviceName,
			wantErr: `/proc/devices: the mock driver's major 236 of "nvidia-caps-imex-channels" is the kernel's "hidraw" on this node`,
		},
		"a device the driver does not register is not found": {
			procDevices: kindProcDevices, mock: true, device: "nvidia-frobnicator", wantErr: "not found",
		},
		"a real root reads the kernel's table only": {
			procDevices: kindProcDevices, device: ImexChannelDeviceName, wantErr: `/proc/devices: character device "nvidia-caps-imex-channels": not found`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := New(t.TempDir())
			if err := writeFile(r.Path(ProcDevices), tc.procDevices); err != nil {
				t.Fatal(err)
			}
			if tc.mock {
				r = r.WithMockDriver()
			}
			got, err := r.CharDeviceMajor(tc.device)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("CharDeviceMajor(%q) = %d, %v; want an error with %q", tc.device, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("CharDeviceMajor(%q) = %d, %v; want %d", tc.device, got, err, tc.want)
			}
		})
	}
}

func TestAMockDriverRootCreatesChannelsAsCharacterDevicesOfTheMockMajor(t *testing.T) {
	// A kind node: a real (not fake) root whose kernel has no NVIDIA driver.
	r := New(t.TempDir())
	if err := writeFile(r.Path(ProcDevices), kindProcDevices); err != nil {
		t.Fatal(err)
	}
	if _, err := r.CreateImexChannel(1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("without the mock driver, CreateImexChannel(1) = %v, want the missing device named", err)
	}
	expectChannelDevice(t, r.WithMockDriver(), 1, 236)
}

func TestAFakeRootListsTheMockDriversMajors(t *testing.T) {
	// The simulated cluster's nodes (fake roots) and kind's (mock-driver
	// roots) give the driver's devices the same numbers.
	r, err := Fake(t.TempDir(), FakeSpec{NodeName: "node-a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mockDriverMajors {
		got, err := r.CharDeviceMajor(m.name)
		if err != nil || got != m.major {
			t.Errorf("fake root: %s = %d, %v; want %d", m.name, got, err, m.major)
		}
	}
}
