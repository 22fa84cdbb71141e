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

package driverroot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
)

// ErrNoDriver is wrapped when neither the kernel module nor libnvidia-ml of
// a driver is found.
var ErrNoDriver = errors.New("no NVIDIA driver found")

// versionPattern is a driver version: "580.95.05", "580.65".
var versionPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+)?$`)

// kernelVersion reads the loaded kernel module's version from
// /proc/driver/nvidia/version under the host root ("NVRM version: NVIDIA
// UNIX Open Kernel Module for x86_64  580.95.05  Release Build ..."). A
// missing file (no module loaded) is "" and no error.
func kernelVersion(host hostroot.Root) (string, error) {
	data, err := os.ReadFile(host.Path(hostroot.DriverVersionFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", hostroot.DriverVersionFile, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "NVRM version:") {
			continue
		}
		for _, field := range strings.Fields(line) {
			if versionPattern.MatchString(field) {
				return field, nil
			}
		}
	}
	return "", fmt.Errorf("%s: no driver version in its NVRM line", hostroot.DriverVersionFile)
}

// libraryVersions lists the versions of libnvidia-ml.so.<version> in the
// driver root's library directories, sorted and without duplicates.
func libraryVersions(root string) ([]string, error) {
	var versions []string
	for _, dir := range libraryDirs {
		matches, err := filepath.Glob(filepath.Join(root, dir, versionedLibraryPrefix+"*"))
		if err != nil {
			return nil, err
		}
		for _, m := range matches {
			v := strings.TrimPrefix(filepath.Base(m), versionedLibraryPrefix)
			if versionPattern.MatchString(v) {
				versions = append(versions, v)
			}
		}
	}
	slices.Sort(versions)
	return slices.Compact(versions), nil
}

// versionedLibraryPrefix is libnvidia-ml's name before its version.
const versionedLibraryPrefix = "libnvidia-ml.so."

// driverVersion decides the version whose files are mounted: the loaded
// kernel module's, which user space must match, when there is one; else the
// only version of libnvidia-ml in the driver root. The kernel's version
// without its libnvidia-ml, or several libnvidia-ml versions and no module,
// is an error naming what was found; nothing at all wraps ErrNoDriver.
func driverVersion(host hostroot.Root, root string) (string, error) {
	kernel, err := kernelVersion(host)
	if err != nil {
		return "", err
	}
	libs, err := libraryVersions(root)
	if err != nil {
		return "", err
	}
	switch {
	case kernel == "" && len(libs) == 0:
		return "", fmt.Errorf("driver root %s: no %s<version> in %v and no %s: %w", root, versionedLibraryPrefix, libraryDirs, hostroot.DriverVersionFile, ErrNoDriver)
	case kernel != "" && slices.Contains(libs, kernel):
		return kernel, nil
	case kernel != "":
		return "", fmt.Errorf("driver root %s: kernel module %s is loaded but %s%s is not in %v (found versions %v): is --driver-root the root the driver was installed to?", root, kernel, versionedLibraryPrefix, kernel, libraryDirs, libs)
	case len(libs) == 1:
		return libs[0], nil
	default:
		return "", fmt.Errorf("driver root %s: several driver versions %v and no loaded kernel module to choose by", root, libs)
	}
}
