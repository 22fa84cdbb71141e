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
	"fmt"
	"os"
	"path/filepath"
)

// libraryDirs are where distributions and the driver's installer put the
// driver's libraries, relative to the driver root, searched in order.
var libraryDirs = []string{
	"usr/lib64",
	"usr/lib/x86_64-linux-gnu",
	"usr/lib/aarch64-linux-gnu",
	"lib64",
	"lib/x86_64-linux-gnu",
	"lib/aarch64-linux-gnu",
	"usr/lib",
	"lib",
}

// driverLibrary is one library of the compute and utility capabilities
// (NVIDIA's default NVIDIA_DRIVER_CAPABILITIES=compute,utility).
type driverLibrary struct {
	// name is the unversioned name; the file is <name>.<version>.
	name string
	// links are the names the library is also mounted under: its soname,
	// which the loader and dlopen look for, and for libcuda the development
	// name some JIT compilers open.
	links []string
}

var driverLibraries = []driverLibrary{
	{name: "libcuda.so", links: []string{"libcuda.so.1", "libcuda.so"}},
	{name: "libnvidia-ml.so", links: []string{"libnvidia-ml.so.1"}},
	{name: "libnvidia-ptxjitcompiler.so", links: []string{"libnvidia-ptxjitcompiler.so.1"}},
	{name: "libnvidia-nvvm.so", links: []string{"libnvidia-nvvm.so.4"}},
	{name: "libcudadebugger.so", links: []string{"libcudadebugger.so.1"}},
	// libnvidia-gpucomp's soname is its versioned name.
	{name: "libnvidia-gpucomp.so"},
	{name: "libnvidia-allocator.so", links: []string{"libnvidia-allocator.so.1"}},
	{name: "libnvidia-cfg.so", links: []string{"libnvidia-cfg.so.1"}},
	{name: "libnvidia-opencl.so", links: []string{"libnvidia-opencl.so.1"}},
}

// Library is a driver library found in the driver root.
type Library struct {
	// Path is relative to the driver root
	// ("usr/lib64/libcuda.so.580.95.05").
	Path string
	// Links are the other names, in Path's directory, it is mounted under
	// ("libcuda.so.1").
	Links []string
}

// findLibraries returns the driver's libraries of this version, each from
// the first library directory that has it. A library the driver does not
// ship (libnvidia-opencl without OpenCL) is left out; libnvidia-ml, which
// every driver has, is required.
func findLibraries(root, version string) ([]Library, error) {
	var libs []Library
	for _, l := range driverLibraries {
		file := l.name + "." + version
		for _, dir := range libraryDirs {
			rel := filepath.Join(dir, file)
			if info, err := os.Stat(filepath.Join(root, rel)); err == nil && info.Mode().IsRegular() {
				libs = append(libs, Library{Path: rel, Links: l.links})
				break
			}
		}
	}
	if !hasLibrary(libs, "libnvidia-ml.so."+version) {
		return nil, fmt.Errorf("driver root %s: libnvidia-ml.so.%s not found in %v", root, version, libraryDirs)
	}
	return libs, nil
}

func hasLibrary(libs []Library, file string) bool {
	for _, l := range libs {
		if filepath.Base(l.Path) == file {
			return true
		}
	}
	return false
}
