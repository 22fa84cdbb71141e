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

package gpu

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

func TestDiscoverDriverFiles(t *testing.T) {
	withDriver := t.TempDir()
	if err := hostroot.FakeDriverFiles(withDriver, "580.95.05"); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		cfg          Config
		wantVersion  string
		wantHostPath string
		wantErr      string
	}{
		"the driver root defaults to the host root and names itself on the host": {
			cfg:         Config{HostRoot: withDriver},
			wantVersion: "580.95.05", wantHostPath: withDriver,
		},
		"a driver container's root is mounted from its host path": {
			cfg:         Config{HostRoot: t.TempDir(), DriverRoot: withDriver, DriverRootHostPath: "/run/nvidia/driver", RequireDriverFiles: true},
			wantVersion: "580.95.05", wantHostPath: "/run/nvidia/driver",
		},
		"the mock on a node without a driver mounts nothing": {
			cfg: Config{HostRoot: t.TempDir()},
		},
		"real NVML without a driver in the driver root fails naming it": {
			cfg:     Config{HostRoot: t.TempDir(), DriverRoot: "/nonexistent/driver-root", RequireDriverFiles: true},
			wantErr: "driver root /nonexistent/driver-root: no libnvidia-ml.so.<version>",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := discoverDriverFiles(testContext(t), tc.cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Version != tc.wantVersion || got.HostPath != tc.wantHostPath {
				t.Errorf("version %q on host path %q, want %q on %q", got.Version, got.HostPath, tc.wantVersion, tc.wantHostPath)
			}
		})
	}
}

// A container of a GPU or MIG claim gets the driver's libraries (under their
// versioned names and sonames) and tools, from the driver root's host path.
func TestPreparedClaimsMountTheDriversFiles(t *testing.T) {
	cases := map[string]struct {
		profile string
		claim   func(d *Driver) *utiltesting.ResourceClaimWrapper
	}{
		"a full GPU": {
			profile: "hgx-h100-8",
			claim: func(*Driver) *utiltesting.ResourceClaimWrapper {
				return utiltesting.MakeResourceClaim("train", "default").UID("uid-g").Device("gpu", testDriver, testNode, "gpu-0")
			},
		},
		"a MIG device": {
			profile: "a100-40gb-mig",
			claim: func(d *Driver) *utiltesting.ResourceClaimWrapper {
				mig := d.Inventory().GPUs[1].MigDevices[0]
				return utiltesting.MakeResourceClaim("infer", "default").UID("uid-m").Device("mig", testDriver, testNode, migDeviceName(1, mig.Profile, mig.GIProfileID, mig.Placement.Start))
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newTestNodeEnv(t, tc.profile, withDriverFiles())
			version, r := e.lib.SystemGetDriverVersion()
			if r != nvml.SUCCESS {
				t.Fatal(r)
			}
			d := e.mustDriver(func(c *Config, _ *Deps) {
				c.DriverRoot, c.DriverRootHostPath, c.RequireDriverFiles = e.hostRoot, "/run/nvidia/driver", true
			})
			ids, err := prepareOne(t, d, tc.claim(d).Obj())
			if err != nil {
				t.Fatal(err)
			}
			view, err := cdi.Resolve(e.cdiRoot, ids...)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				"/usr/lib/x86_64-linux-gnu/libcuda.so." + version,
				"/usr/lib/x86_64-linux-gnu/libcuda.so.1",
				"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so." + version,
				"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
				"/usr/local/nvidia/lib64/libcuda.so.1",
				"/usr/bin/nvidia-smi",
				"/lib/firmware/nvidia/" + version,
			} {
				if !slices.Contains(view.Mounts, want) {
					t.Errorf("container mounts lack %s: %v", want, view.Mounts)
				}
			}
			specs, err := filepath.Glob(filepath.Join(e.cdiRoot, "*.json"))
			if err != nil || len(specs) != 1 {
				t.Fatalf("CDI specs %v (%v), want one", specs, err)
			}
			spec, err := os.ReadFile(specs[0])
			if err != nil {
				t.Fatal(err)
			}
			if host := "/run/nvidia/driver/usr/bin/nvidia-smi"; !strings.Contains(string(spec), host) {
				t.Errorf("the spec does not mount nvidia-smi from its host path %s:\n%s", host, spec)
			}
		})
	}
}
