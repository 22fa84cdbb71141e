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
	"path/filepath"
	"testing"
)

// writeHostFile writes content at the host path rel under root.
func writeHostFile(t *testing.T, root, rel, content string) {
	t.Helper()
	path := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// FuzzReaders feeds the host files the plugins parse (/proc/devices, the MIG minors, a capability file, the
// boot ID) with arbitrary content: each reader returns a value or an error, never panics, and a major or
// minor it returns fits in 32 bits.
func FuzzReaders(f *testing.F) {
	f.Add("Character devices:\n195 nvidia\n234 nvidia-caps-imex-channels\n\nBlock devices:\n8 sd\n",
		"gpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n", "DeviceFileMinor: 1\nDeviceFileMode: 256\n", "c0ffee00-0000-4000-8000-000000000000\n")
	f.Add("Character devices:\n99999999999 nvidia-caps-imex-channels\n", "gpu0/gi1/access x\n", "DeviceFileMinor: -1\n", "")
	f.Add("nvidia-caps-imex-channels\n", "\n\n", "", "\n")
	dir := f.TempDir() // one root, rewritten by every input: a directory per input would dominate the run
	f.Fuzz(func(t *testing.T, devices, migMinors, capability, bootID string) {
		writeHostFile(t, dir, ProcDevices, devices)
		writeHostFile(t, dir, MIGMinorsFile, migMinors)
		writeHostFile(t, dir, CapabilitiesDir+"/mig/config", capability)
		writeHostFile(t, dir, BootIDFile, bootID)
		r := New(dir)
		_, _ = r.ImexChannelMajor()
		_, _ = r.CharDeviceMajor("nvidia")
		_, _ = r.MIGMinors()
		_, _ = r.CapabilityMinor("mig/config")
		_, _ = r.BootID()
	})
}
