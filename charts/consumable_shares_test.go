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

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/computedomain-operator/computedomain-operator/kubeletplugin/gpu"
)

// gpuPluginContainer is the GPU plugin container of the rendered DaemonSet.
func gpuPluginContainer(t *testing.T, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	for _, ds := range byKind(objs, "DaemonSet") {
		containers, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			if cm, _ := c.(map[string]any); cm["name"] == "gpu-kubelet-plugin" {
				return cm
			}
		}
	}
	t.Fatal("no gpu-kubelet-plugin container")
	return nil
}

// gpuPluginEnv is the GPU plugin container's environment (name → value) in the rendered objects.
func gpuPluginEnv(t *testing.T, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	out := map[string]string{}
	env, _, _ := unstructured.NestedSlice(gpuPluginContainer(t, objs), "env")
	for _, e := range env {
		em, _ := e.(map[string]any)
		if v, ok := em["value"].(string); ok {
			out[em["name"].(string)] = v
		}
	}
	return out
}

// TestConsumableSharesValueReachesTheGPUPlugin: consumableShares becomes the plugin's CONSUMABLE_SHARES, in a
// spelling the plugin parses to the mode asked for.
func TestConsumableSharesValueReachesTheGPUPlugin(t *testing.T) {
	cases := map[string]struct {
		args []string
		want gpu.Shares
	}{
		"off by default":                   {want: gpu.Shares{Mode: gpu.SharesDisabled}},
		"memory":                           {args: []string{"-f", filepath.Join(chartDir, "ci", "consumable-shares-values.yaml")}, want: gpu.Shares{Mode: gpu.SharesMemory}},
		"four shares per GPU":              {args: []string{"--set", "featureGates.ConsumableShares=true", "--set-string", "consumableShares=4"}, want: gpu.Shares{Mode: gpu.SharesCount, Count: 4}},
		"empty, as NVIDIA's chart default": {args: []string{"--set", "consumableShares="}, want: gpu.Shares{Mode: gpu.SharesDisabled}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			env := gpuPluginEnv(t, renderChart(t, "computedomain-operator", tc.args...))
			got, err := gpu.ParseShares(env["CONSUMABLE_SHARES"])
			if err != nil {
				t.Fatalf("the plugin refuses the chart's CONSUMABLE_SHARES: %v", err)
			}
			if got != tc.want {
				t.Errorf("CONSUMABLE_SHARES=%q is %+v, want %+v", env["CONSUMABLE_SHARES"], got, tc.want)
			}
		})
	}
}

func TestConsumableSharesValueRefusals(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"shares with the gate off": {args: []string{"--set", "consumableShares=unlimited"},
			want: "consumableShares unlimited needs featureGates.ConsumableShares: true"},
		"a mode NVIDIA does not have": {args: []string{"--set", "featureGates.ConsumableShares=true", "--set", "consumableShares=half"},
			want: "consumableShares"},
		"zero shares": {args: []string{"--set", "featureGates.ConsumableShares=true", "--set-string", "consumableShares=0"},
			want: "consumableShares"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command(helmBinary(t), append([]string{"template", "cdo", chartDir, "--kube-version", kubeVersion}, tc.args...)...).CombinedOutput()
			if err == nil {
				t.Fatalf("helm template %v rendered", tc.args)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("helm template %v: the error does not say %q:\n%s", tc.args, tc.want, out)
			}
		})
	}
}
