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

import "fmt"

// charMajor is one line of the "Character devices:" section of /proc/devices.
type charMajor struct {
	major uint32
	name  string
}

// mockDriverMajors are the character devices the NVIDIA driver registers, with
// the majors a fake root's /proc/devices lists and a mock-driver root
// (WithMockDriver) stands in with. 195 is fixed by the driver; the others are
// dynamic on real nodes.
var mockDriverMajors = []charMajor{
	{195, "nvidia"},
	{234, "nvidia-nvswitch"},
	{235, "nvidia-nvlink"},
	{236, ImexChannelDeviceName},
	{237, "nvidia-caps"},
	{238, "nvidia-uvm"},
}

// WithMockDriver returns the root of a node whose NVML is the mock (kind, a
// CI node): it has no NVIDIA driver, so the kernel's /proc/devices lacks the
// driver's character devices. For each of those the root answers with the
// fake driver's major (the one a fake root's /proc/devices lists, 236 for
// nvidia-caps-imex-channels), so that IMEX channel entries are created as real
// character devices of that major, as the mock's GPUs are injected as
// /dev/nvidia<N> of major 195. A device the kernel does list keeps the
// kernel's major; a mock major the kernel has given to another device is an
// error naming both, so that a mock device entry never opens a real device.
// A root without WithMockDriver reads /proc/devices only.
func (r Root) WithMockDriver() Root {
	r.mockDriver = true
	return r
}

// MockDriver reports whether the root stands in for the NVIDIA driver's
// character devices (WithMockDriver).
func (r Root) MockDriver() bool { return r.mockDriver }

// mockDriverMajor returns the mock driver's major of name, refusing one the
// kernel's table (from /proc/devices) has given to another device.
func mockDriverMajor(name string, kernel []charMajor) (uint32, bool, error) {
	for _, m := range mockDriverMajors {
		if m.name != name {
			continue
		}
		for _, k := range kernel {
			if k.major == m.major {
				return 0, false, fmt.Errorf("%s: the mock driver's major %d of %q is the kernel's %q on this node: no mock device of that major", ProcDevices, m.major, name, k.name)
			}
		}
		return m.major, true, nil
	}
	return 0, false, nil
}
