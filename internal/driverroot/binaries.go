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
	"os"
	"path/filepath"
)

// binaryDirs are where the driver's tools are, relative to the driver root.
var binaryDirs = []string{"usr/bin", "usr/sbin", "bin", "sbin"}

// driverBinaries are the tools of the utility and compute capabilities.
var driverBinaries = []string{
	"nvidia-smi",
	"nvidia-debugdump",
	"nvidia-persistenced",
	"nvidia-cuda-mps-control",
	"nvidia-cuda-mps-server",
}

// findBinaries returns the driver's tools present in the driver root,
// relative to it, each from the first directory that has it.
func findBinaries(root string) []string {
	var bins []string
	for _, name := range driverBinaries {
		for _, dir := range binaryDirs {
			rel := filepath.Join(dir, name)
			if info, err := os.Stat(filepath.Join(root, rel)); err == nil && info.Mode().IsRegular() {
				bins = append(bins, rel)
				break
			}
		}
	}
	return bins
}
