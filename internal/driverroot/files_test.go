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
	"testing"
)

// writeFiles creates empty files at the given paths under root; a path
// ending in "/" is a directory.
func writeFiles(t *testing.T, root string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		full := filepath.Join(root, p)
		if p[len(p)-1] == '/' {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// writeKernelVersion writes /proc/driver/nvidia/version as the driver does.
func writeKernelVersion(t *testing.T, host, version string) {
	t.Helper()
	writeFiles(t, host, "proc/driver/nvidia/")
	line := "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  " + version + "  Release Build  (dvs-builder@U22-I3-AE18-23-3)  Thu Sep 18 20:49:49 UTC 2025\nGCC version:  gcc version 12.3.0\n"
	if err := os.WriteFile(filepath.Join(host, "proc/driver/nvidia/version"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}
