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

package computedomain

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// TestChartDeviceClasses evaluates the selectors of the compute-domain DeviceClasses the chart ships, with
// the scheduler's CEL compiler, against the devices the compute-domain kubelet plugin publishes: each
// class selects its device type on any slot (no `id == 0`), and nothing of another driver.
func TestChartDeviceClasses(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "../../charts/computedomain-operator/templates")
	classes := map[string]*resourceapi.DeviceClass{}
	for _, f := range []string{"deviceclass-compute-domain-channel.yaml", "deviceclass-compute-domain-daemon.yaml"} {
		raw, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		var dc resourceapi.DeviceClass
		if err := yaml.UnmarshalStrict(raw, &dc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		classes[dc.Name] = &dc
	}

	device := func(driver, typ string, id int64) cel.Device {
		return cel.Device{Driver: driver, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			resourceapi.QualifiedName(driver + "/type"): {StringValue: ptr.To(typ)},
			resourceapi.QualifiedName(driver + "/id"):   {IntValue: ptr.To(id)},
		}}
	}
	devices := map[string]cel.Device{
		"channel-0":            device(DefaultDriverName, "channel", 0),
		"channel-7":            device(DefaultDriverName, "channel", 7),
		"daemon-0":             device(DefaultDriverName, "daemon", 0),
		"daemon-3":             device(DefaultDriverName, "daemon", 3),
		"gpu-0":                device("gpu.nvidia.com", "gpu", 0),
		"other-driver-channel": device("cd.example.com", "channel", 1),
	}
	want := map[string][]string{
		DefaultChannelDeviceClass: {"channel-0", "channel-7"},
		// Kept for manifests written for NVIDIA's driver; our controller makes no daemon claims.
		"compute-domain-daemon.nvidia.com": {"daemon-0", "daemon-3"},
	}
	got := map[string][]string{}
	compiler := cel.GetCompiler(cel.Features{})
	for name, dc := range classes {
		got[name] = []string{}
		for _, s := range dc.Spec.Selectors {
			res := compiler.CompileCELExpression(s.CEL.Expression, cel.Options{})
			if res.Error != nil {
				t.Fatalf("class %s: compile %q: %v", name, s.CEL.Expression, res.Error)
			}
			for _, devName := range []string{"channel-0", "channel-7", "daemon-0", "daemon-3", "gpu-0", "other-driver-channel"} {
				ok, _, err := res.DeviceMatches(context.Background(), devices[devName])
				if err != nil {
					t.Fatalf("class %s on %s: %v", name, devName, err)
				}
				if ok {
					got[name] = append(got[name], devName)
				}
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("devices each class selects (-want +got):\n%s", diff)
	}
}
