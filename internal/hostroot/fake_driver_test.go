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
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestAFakeRootHasTheDriversUserSpaceFiles(t *testing.T) {
	dir := t.TempDir()
	r, err := Fake(dir, FakeSpec{NodeName: "n", GPUs: 1, DriverVersion: "580.82.07"})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		"/usr/lib/x86_64-linux-gnu/libcuda.so.580.82.07",
		"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.82.07",
		"/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.580.82.07",
		"/lib/firmware/nvidia/580.82.07/gsp_ga10x.bin",
	} {
		if _, err := os.Stat(r.Path(path)); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
	if target, err := os.Readlink(r.Path("/usr/lib/x86_64-linux-gnu/libcuda.so.1")); err != nil || target != "libcuda.so.580.82.07" {
		t.Errorf("libcuda.so.1 -> %q (%v), want libcuda.so.580.82.07", target, err)
	}
	out, err := exec.Command(r.Path("/usr/bin/nvidia-smi")).Output()
	if err != nil {
		t.Fatalf("fake nvidia-smi: %v", err)
	}
	if !strings.Contains(string(out), "Driver Version: 580.82.07") {
		t.Errorf("fake nvidia-smi printed %q, want the driver version", out)
	}
	if _, err := Fake(dir, FakeSpec{NodeName: "n", GPUs: 1, DriverVersion: "580.82.07"}); err != nil {
		t.Errorf("making the fake root again: %v", err)
	}
}

func TestFakeDriverFilesNeedAVersion(t *testing.T) {
	dir := t.TempDir()
	if err := FakeDriverFiles(dir, ""); err == nil || !strings.Contains(err.Error(), "empty driver version") {
		t.Errorf("error = %v, want it to name the empty version", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "usr")); len(entries) != 0 {
		t.Errorf("files written before the error: %v", entries)
	}
}
