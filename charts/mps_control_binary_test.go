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

package charts

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMPSControlBinaryReachesTheGPUPlugin: by default the GPU plugin gets no MPS_CONTROL_BINARY and runs the
// driver's nvidia-cuda-mps-control (its own default, in the driver root); kind's values give it the image's
// stand-in.
func TestMPSControlBinaryReachesTheGPUPlugin(t *testing.T) {
	cases := map[string]struct {
		args   []string
		want   string
		wantOK bool
	}{
		"the plugin's default": {},
		"kind's stand-in":      {args: []string{"-f", filepath.Join(chartDir, "ci", "kind-values.yaml")}, want: "/usr/bin/mps-control-standin", wantOK: true},
		"an explicit path":     {args: []string{"--set", "kubeletPlugin.gpu.mpsControlBinary=/opt/mps/nvidia-cuda-mps-control"}, want: "/opt/mps/nvidia-cuda-mps-control", wantOK: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := gpuPluginEnv(t, renderChart(t, "computedomain-operator", tc.args...))["MPS_CONTROL_BINARY"]
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("MPS_CONTROL_BINARY = %q (set: %t), want %q (set: %t)", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestMPSControlBinaryMustBeAbsolute(t *testing.T) {
	out, err := exec.Command(helmBinary(t), "template", "cdo", chartDir, "--kube-version", kubeVersion,
		"--set", "kubeletPlugin.gpu.mpsControlBinary=usr/bin/nvidia-cuda-mps-control").CombinedOutput()
	if err == nil {
		t.Fatal("a relative kubeletPlugin.gpu.mpsControlBinary rendered")
	}
	if !strings.Contains(string(out), "mpsControlBinary") {
		t.Errorf("the error does not name kubeletPlugin.gpu.mpsControlBinary:\n%s", out)
	}
}
