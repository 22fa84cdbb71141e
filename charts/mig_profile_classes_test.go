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
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/dynamic-resource-allocation/cel"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
	"github.com/computedomain-operator/computedomain-operator/internal/testing/envtest"
	"github.com/computedomain-operator/computedomain-operator/kubeletplugin/gpu"
)

// multiTenantValues is the ci values file with a DeviceClass per MIG profile and the sharing policy.
var multiTenantValues = filepath.Join(chartDir, "ci", "multi-tenant-values.yaml")

// deviceClassSelector is a rendered DeviceClass's name, its one CEL selector compiled, and its extended resource.
type deviceClassSelector struct {
	name, extendedResource string
	selector               cel.CompilationResult
}

func renderedDeviceClasses(t *testing.T, objs []*unstructured.Unstructured) []deviceClassSelector {
	t.Helper()
	compiler := cel.GetCompiler(cel.Features{})
	var out []deviceClassSelector
	for _, o := range byKind(objs, "DeviceClass") {
		sels, _, _ := unstructured.NestedSlice(o.Object, "spec", "selectors")
		if len(sels) != 1 {
			t.Fatalf("DeviceClass %s has %d selectors, want 1", o.GetName(), len(sels))
		}
		expr, _, _ := unstructured.NestedString(sels[0].(map[string]any), "cel", "expression")
		res := compiler.CompileCELExpression(expr, cel.Options{})
		if res.Error != nil {
			t.Fatalf("DeviceClass %s: selector %q does not compile: %v", o.GetName(), expr, res.Error)
		}
		ext, _, _ := unstructured.NestedString(o.Object, "spec", "extendedResourceName")
		out = append(out, deviceClassSelector{name: o.GetName(), extendedResource: ext, selector: res})
	}
	return out
}

// publishedDevices are the GPU plugin's devices on a mock node of profile, as it publishes them (partitionable
// MIG: every profile and placement).
func publishedDevices(t *testing.T, profile string, partitionable bool) []resourceapi.Device {
	t.Helper()
	cfg := mock.Config{NodeName: "node-0", Profile: profile}
	if partitionable {
		cfg.MIG = mock.MIGDynamic
	}
	lib, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r := lib.Init(); r != nvml.SUCCESS {
		t.Fatalf("mock init: %v", r)
	}
	inv, err := gpu.DiscoverInventory(context.Background(), lib, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var devices []resourceapi.Device
	for _, s := range gpu.ResourceSlices("gpu.nvidia.com", "node-0", gpu.BuildResources(inv, gpu.PublishOptions{PoolName: "node-0", PartitionableMIG: partitionable})) {
		devices = append(devices, s.Spec.Devices...)
	}
	return devices
}

// TestMIGProfileClassesSelectTheirProfile: with deviceClasses.migProfiles listing every MIG profile of the mock's
// MIG-enabled GPUs, each MIG device the GPU plugin publishes (static MIG devices, and every profile and placement
// of partitionable MIG) is selected by exactly one per-profile class, the one named after its profile attribute,
// and still by mig.nvidia.com; full GPUs by neither. So a device quota on a per-profile class counts partitions of
// that one size.
func TestMIGProfileClassesSelectTheirProfile(t *testing.T) {
	classes := renderedDeviceClasses(t, renderChart(t, policyNamespace, "-f", multiTenantValues))
	byName := map[string]deviceClassSelector{}
	for _, c := range classes {
		byName[c.name] = c
	}
	seenProfiles := map[string]bool{}
	for _, profile := range mock.ProfileNames() {
		spec, err := mock.LoadProfile(profile)
		if err != nil {
			t.Fatal(err)
		}
		if spec.MIG == nil {
			continue
		}
		for _, mp := range spec.MIG.Profiles {
			class := "mig-" + strings.ReplaceAll(mp.Name, "+", ".") + ".nvidia.com"
			c, ok := byName[class]
			if !ok {
				t.Errorf("%s: MIG profile %s has no class %s in %s", profile, mp.Name, class, multiTenantValues)
				continue
			}
			want := "nvidia.com/mig-" + mp.Name
			if strings.Contains(mp.Name, "+") {
				want = ""
			}
			if c.extendedResource != want {
				t.Errorf("class %s: extendedResourceName %q, want %q", class, c.extendedResource, want)
			}
		}
		for _, partitionable := range []bool{false, true} {
			devices := publishedDevices(t, profile, partitionable)
			if len(devices) == 0 {
				t.Fatalf("%s (partitionable %v): the plugin publishes no devices", profile, partitionable)
			}
			for _, d := range devices {
				var matched []string
				for _, c := range classes {
					ok, _, err := c.selector.DeviceMatches(context.Background(), cel.Device{
						Driver: "gpu.nvidia.com", AllowMultipleAllocations: d.AllowMultipleAllocations, Attributes: d.Attributes, Capacity: d.Capacity})
					if err != nil {
						t.Fatalf("class %s on %s device %s: %v", c.name, profile, d.Name, err)
					}
					if ok {
						matched = append(matched, c.name)
					}
				}
				sort.Strings(matched)
				want := []string{"gpu.nvidia.com"}
				if typ := d.Attributes["type"].StringValue; typ != nil && *typ == "mig" {
					p := *d.Attributes["profile"].StringValue
					seenProfiles[p] = true
					want = []string{"mig-" + strings.ReplaceAll(p, "+", ".") + ".nvidia.com", "mig.nvidia.com"}
				}
				if diff := cmp.Diff(want, matched); diff != "" {
					t.Errorf("%s (partitionable %v) device %s: classes (-want +got):\n%s", profile, partitionable, d.Name, diff)
				}
			}
		}
	}
	if len(seenProfiles) < 10 {
		t.Errorf("the mock nodes published MIG devices of only %d profiles (%v); the test checks too little", len(seenProfiles), seenProfiles)
	}
}

// TestMIGProfileClassesAreValidDeviceClasses: a real kube-apiserver accepts every per-profile class (names,
// selectors, extended resource names) next to the chart's other classes, so that nvidia.com/gpu and each
// nvidia.com/mig-<profile> belong to one class.
func TestMIGProfileClassesAreValidDeviceClasses(t *testing.T) {
	env, err := envtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	objs := byKind(renderChart(t, policyNamespace, "-f", multiTenantValues), "DeviceClass")
	if len(objs) < 4+13 {
		t.Fatalf("the chart renders %d DeviceClasses with %s, want the 4 it always installs and 13 per-profile ones", len(objs), multiTenantValues)
	}
	ext := map[string]string{}
	for _, o := range objs {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Errorf("create DeviceClass %s: %v", o.GetName(), err)
		}
		if name, _, _ := unstructured.NestedString(o.Object, "spec", "extendedResourceName"); name != "" {
			if other, dup := ext[name]; dup {
				t.Errorf("extended resource %s is served by both %s and %s", name, other, o.GetName())
			}
			ext[name] = o.GetName()
		}
	}
}
