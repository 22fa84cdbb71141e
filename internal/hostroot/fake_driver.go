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
	"path/filepath"
)

// FakeLibraryDir is where a fake root keeps the driver's libraries, as the
// driver's installer does on Debian and Ubuntu x86_64.
const FakeLibraryDir = "/usr/lib/x86_64-linux-gnu"

// fakeDriverLibraries are the user-space libraries of a fake driver: the
// compute and utility set a CUDA container needs.
var fakeDriverLibraries = []string{
	"libcuda.so", "libnvidia-ml.so", "libnvidia-ptxjitcompiler.so", "libnvidia-nvvm.so",
	"libcudadebugger.so", "libnvidia-gpucomp.so", "libnvidia-allocator.so", "libnvidia-cfg.so",
}

// fakeDriverBinaries are the driver's tools a fake root has in /usr/bin.
var fakeDriverBinaries = []string{"nvidia-smi", "nvidia-debugdump", "nvidia-cuda-mps-control", "nvidia-cuda-mps-server"}

// FakeDriverFiles writes the user-space files of an NVIDIA driver of the
// given version under dir, laid out as the driver installs them: the
// libraries as <name>.<version> with the .so.1 symlinks of libcuda and
// libnvidia-ml, the tools in /usr/bin (nvidia-smi is a script that prints
// the version) and the GSP firmware directory. The files are placeholders:
// only their names and places are real.
func FakeDriverFiles(dir, version string) error {
	if version == "" {
		return errors.New("fake driver files: empty driver version")
	}
	r := New(dir)
	files := map[string]string{
		fmt.Sprintf("/lib/firmware/nvidia/%s/gsp_ga10x.bin", version): "fake GSP firmware\n",
	}
	for _, lib := range fakeDriverLibraries {
		files[fmt.Sprintf("%s/%s.%s", FakeLibraryDir, lib, version)] = "fake " + lib + " " + version + "\n"
	}
	for _, bin := range fakeDriverBinaries {
		files["/usr/bin/"+bin] = "#!/bin/sh\necho 'fake " + bin + " " + version + "'\n"
	}
	files["/usr/bin/nvidia-smi"] = fmt.Sprintf("#!/bin/sh\necho 'NVIDIA-SMI %s    Driver Version: %s'\n", version, version)
	for path, content := range files {
		if err := writeFile(r.Path(path), content); err != nil {
			return fmt.Errorf("fake driver files: %w", err)
		}
	}
	for _, bin := range fakeDriverBinaries {
		if err := os.Chmod(r.Path("/usr/bin/"+bin), 0o755); err != nil {
			return fmt.Errorf("fake driver files: %w", err)
		}
	}
	for _, lib := range []string{"libcuda.so", "libnvidia-ml.so"} {
		link := r.Path(fmt.Sprintf("%s/%s.1", FakeLibraryDir, lib))
		if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("fake driver files: %w", err)
		}
		if err := os.Symlink(filepath.Base(fmt.Sprintf("%s.%s", lib, version)), link); err != nil {
			return fmt.Errorf("fake driver files: %w", err)
		}
	}
	return nil
}
