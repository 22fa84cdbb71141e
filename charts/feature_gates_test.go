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
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/computedomain-operator/computedomain-operator/internal/featuregates"
	"github.com/computedomain-operator/computedomain-operator/kubeletplugin/gpu"
)

// TestFeatureGateValuesReachTheGPUPlugin: the featureGates values render into the GPU plugin's --feature-gates,
// under names the plugin knows (a renamed gate on either side fails the parse), with the values set.
func TestFeatureGateValuesReachTheGPUPlugin(t *testing.T) {
	cases := map[string]struct {
		values string
		want   string
	}{
		"defaults": {values: "default-values.yaml", want: "ConsumableShares=false,DynamicMIG=false,FabricManagerPartitioning=false,MPSSupport=true,NVMLDeviceHealthCheck=true,PassthroughSupport=false,TimeSlicingSettings=true"},
		"no sharing, no health checks": {values: "no-sharing-values.yaml",
			want: "ConsumableShares=false,DynamicMIG=false,FabricManagerPartitioning=false,MPSSupport=false,NVMLDeviceHealthCheck=false,PassthroughSupport=false,TimeSlicingSettings=false"},
		"partitionable MIG": {values: "ha-values.yaml", want: "ConsumableShares=false,DynamicMIG=true,FabricManagerPartitioning=false,MPSSupport=true,NVMLDeviceHealthCheck=true,PassthroughSupport=false,TimeSlicingSettings=true"},
		"consumable shares": {values: "consumable-shares-values.yaml", want: "ConsumableShares=true,DynamicMIG=false,FabricManagerPartitioning=false,MPSSupport=true,NVMLDeviceHealthCheck=true,PassthroughSupport=false,TimeSlicingSettings=true"},
		"passthrough and Fabric Manager partitions": {values: "passthrough-values.yaml",
			want: "ConsumableShares=false,DynamicMIG=false,FabricManagerPartitioning=true,MPSSupport=true,NVMLDeviceHealthCheck=true,PassthroughSupport=true,TimeSlicingSettings=true"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := renderChart(t, "computedomain-operator", "-f", filepath.Join(chartDir, "ci", tc.values))
			var value string
			found := false
			args, _, _ := unstructured.NestedStringSlice(gpuPluginContainer(t, objs), "args")
			for _, a := range args {
				if v, ok := strings.CutPrefix(a, "--feature-gates="); ok {
					value, found = v, true
				}
			}
			if !found {
				t.Fatal("the GPU plugin container has no --feature-gates")
			}
			gates, err := featuregates.Parse(gpu.FeatureGates, value)
			if err != nil {
				t.Fatalf("the plugin refuses the chart's gates: %v", err)
			}
			if gates.String() != tc.want {
				t.Errorf("gates = %s, want %s", gates, tc.want)
			}
		})
	}
}
