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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/pflag"
)

func parseFlags(args []string, env map[string]string) (*Flags, error) {
	f := &Flags{}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	f.AddFlags(fs, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, FlagHelp{DriverName: "example.nvidia.com"})
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return f, f.Validate()
}

func TestFlagsDefaults(t *testing.T) {
	f, err := parseFlags(nil, map[string]string{"NODE_NAME": "tray-1"})
	if err != nil {
		t.Fatal(err)
	}
	want := &Flags{NodeName: "tray-1", DriverName: "example.nvidia.com", HostRoot: "/", CDIRoot: "/var/run/cdi", RegistrarDir: DefaultRegistrarDir, PluginsDir: DefaultPluginsDir}
	if diff := cmp.Diff(want, f, cmpopts.IgnoreFields(Flags{}, "NVML", "Log")); diff != "" {
		t.Errorf("flags (-want +got):\n%s", diff)
	}
	wantOpts := Options{DriverName: "example.nvidia.com", NodeName: "tray-1", RegistrarDir: DefaultRegistrarDir, PluginsDir: DefaultPluginsDir}
	if diff := cmp.Diff(wantOpts, f.Options()); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
}

func TestFlagsValidateRejects(t *testing.T) {
	cases := map[string]struct {
		args    []string
		wantErr string
	}{
		"no node name":                {args: nil, wantErr: "--node-name: required (or NODE_NAME)"},
		"a driver name with capitals": {args: []string{"--node-name=n", "--driver-name=CD_Driver"}, wantErr: `--driver-name "CD_Driver": must be a DNS subdomain`},
		"a relative host root":        {args: []string{"--node-name=n", "--host-root=host"}, wantErr: `--host-root "host": must be an absolute path`},
		"a relative CDI root":         {args: []string{"--node-name=n", "--cdi-root=cdi"}, wantErr: `--cdi-root "cdi": must be an absolute path`},
		"a relative registrar dir":    {args: []string{"--node-name=n", "--kubelet-registrar-directory-path=reg"}, wantErr: `--kubelet-registrar-directory-path "reg": must be an absolute path`},
		"a relative plugins dir":      {args: []string{"--node-name=n", "--kubelet-plugins-directory-path=plg"}, wantErr: `--kubelet-plugins-directory-path "plg": must be an absolute path`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := parseFlags(tc.args, nil); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestParse(t *testing.T) {
	env := map[string]string{"NODE_NAME": "tray-1"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cases := map[string]struct {
		args         []string
		help         FlagHelp
		wantErr      string
		wantNVMLNode string
	}{
		"the NVML mock serves the plugin's node unless told otherwise": {
			args:         []string{"--nvml=mock", "--nvml-mock-profile=hgx-h100-8"},
			wantNVMLNode: "tray-1",
		},
		"a plugin's own flag is parsed next to the shared ones": {
			args:         []string{"--own=3", "-v=4"},
			wantNVMLNode: "tray-1",
		},
		"a positional argument is refused": {
			args:    []string{"extra"},
			wantErr: `unexpected arguments ["extra"]: every setting is a flag`,
		},
		"a positional argument is refused, naming the subcommands": {
			args:    []string{"extra"},
			help:    FlagHelp{Subcommands: []string{"inspect"}},
			wantErr: "the only subcommands are inspect",
		},
		"a shared flag is validated": {
			args:    []string{"--cdi-root=cdi"},
			wantErr: `--cdi-root "cdi": must be an absolute path`,
		},
		"the NVML backend's flags are validated": {
			args:    []string{"--nvml=mock"},
			wantErr: "--nvml-mock-profile",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var f Flags
			var own int
			fs := pflag.NewFlagSet("test-plugin", pflag.ContinueOnError)
			fs.IntVar(&own, "own", 0, "a plugin's own flag")
			tc.help.DriverName = "example.nvidia.com"
			err := f.Parse(fs, tc.args, lookup, tc.help)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.NVML.NodeName != tc.wantNVMLNode {
				t.Errorf("NVML node = %q, want %q", f.NVML.NodeName, tc.wantNVMLNode)
			}
			if f.Log == nil {
				t.Error("no logger configuration")
			}
		})
	}
}
