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

package draplugin

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/backend"
)

func TestNodeFiles(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "host")
	if _, err := hostroot.Fake(host, hostroot.FakeSpec{NodeName: "tray-1", BootID: "boot-7"}); err != nil {
		t.Fatal(err)
	}
	f := Flags{DriverName: "example.nvidia.com", HostRoot: host, CDIRoot: filepath.Join(dir, "cdi"), PluginsDir: filepath.Join(dir, "plugins")}
	writer, store, err := f.NodeFiles()
	if err != nil {
		t.Fatal(err)
	}
	if writer == nil {
		t.Fatal("no CDI writer")
	}
	// The checkpoint lives in the plugin's data directory and belongs to the
	// host's boot: after a reboot its state is discarded as boot-7's.
	if err := store.Save(checkpoint.New("")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "plugins", "example.nvidia.com", CheckpointFile)
	if _, res, err := checkpoint.NewStore(path, "boot-8").Load(); err != nil || !res.Found || res.DiscardedBootID != "boot-7" {
		t.Errorf("after a reboot: discarded boot %q, error %v; want boot-7 discarded", res.DiscardedBootID, err)
	}

	f.HostRoot = filepath.Join(dir, "no-host")
	if _, _, err := f.NodeFiles(); err == nil || !strings.Contains(err.Error(), "--host-root") {
		t.Errorf("error without a boot ID = %v, want one naming --host-root", err)
	}
}

func TestOnlyAMockNVMLNodeStandsInForTheDriversDevices(t *testing.T) {
	cases := map[string]struct {
		mode backend.Mode
		want bool
	}{
		"--nvml=mock: the node has no driver, the mock's majors stand in": {mode: backend.ModeMock, want: true},
		"--nvml=real: /proc/devices only":                                 {mode: backend.ModeReal, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := Flags{HostRoot: "/host", NVML: backend.Options{Mode: tc.mode}}
			root := f.Root()
			if root.Dir() != "/host" || root.MockDriver() != tc.want {
				t.Errorf("Root() = %s, mock driver %v; want /host, %v", root.Dir(), root.MockDriver(), tc.want)
			}
		})
	}
}
