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

	"golang.org/x/sys/unix"
)

// MaxImexChannels is the number of IMEX channels current drivers offer.
const MaxImexChannels = 2048

// CreateImexChannel makes sure the device entry of IMEX channel n exists and
// reports whether it created it. On a real root it is a character device
// (major from /proc/devices, minor n, mode 0666), as the driver's own
// NVreg_CreateImexChannel0 would make; on a fake root a regular file naming
// the device numbers.
func (r Root) CreateImexChannel(n int) (bool, error) {
	if n < 0 || n >= MaxImexChannels {
		return false, fmt.Errorf("IMEX channel %d: want 0..%d", n, MaxImexChannels-1)
	}
	path := r.ImexChannelPath(n)
	if _, err := os.Stat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("IMEX channel %d: %w", n, err)
	}
	major, err := r.ImexChannelMajor()
	if err != nil {
		return false, fmt.Errorf("IMEX channel %d: %w", n, err)
	}
	if err := os.MkdirAll(r.Path(ImexChannelDir), 0o755); err != nil {
		return false, fmt.Errorf("IMEX channel %d: %w", n, err)
	}
	if r.IsFake() {
		if err := writeFile(path, charDev(major, uint32(n))); err != nil {
			return false, fmt.Errorf("IMEX channel %d: %w", n, err)
		}
		return true, nil
	}
	dev := unix.Mkdev(major, uint32(n))
	if err := unix.Mknod(path, unix.S_IFCHR|0o666, int(dev)); err != nil && !errors.Is(err, fs.ErrExist) {
		return false, fmt.Errorf("IMEX channel %d: mknod %s: %w", n, path, err)
	}
	return true, nil
}

// FakeDeviceNumbers reads the "c MAJOR:MINOR" content of a fake device
// entry, for tests.
func (r Root) FakeDeviceNumbers(hostPath string) (major, minor uint32, err error) {
	data, err := os.ReadFile(r.Path(hostPath))
	if err != nil {
		return 0, 0, err
	}
	if _, err := fmt.Sscanf(string(data), "c %d:%d", &major, &minor); err != nil {
		return 0, 0, fmt.Errorf("%s: not a fake device entry: %w", hostPath, err)
	}
	return major, minor, nil
}
