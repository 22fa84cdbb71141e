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
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The GPU plugin names the driver root's host path in the CDI mounts of the
// driver's files, so it must get the same path the driver-root volume mounts.
func TestGPUPluginMountsTheDriverRootItIsToldAbout(t *testing.T) {
	const hostPath = "/run/nvidia/driver"
	ds := named(byKind(renderChart(t, "computedomain-operator", "--set", "kubeletPlugin.driverRoot="+hostPath), "DaemonSet"), "compute-domain-kubelet-plugin")
	if len(ds) != 1 {
		t.Fatalf("want one kubelet-plugin DaemonSet, got %d", len(ds))
	}
	spec := ds[0].Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	volumes, _, _ := unstructured.NestedSlice(spec, "volumes")
	volumeHostPath := ""
	for _, v := range volumes {
		if vm := v.(map[string]any); vm["name"] == "driver-root" {
			volumeHostPath, _, _ = unstructured.NestedString(vm, "hostPath", "path")
		}
	}
	if volumeHostPath != hostPath {
		t.Errorf("driver-root volume host path %q, want %q", volumeHostPath, hostPath)
	}
	containers, _, _ := unstructured.NestedSlice(spec, "containers")
	found := false
	for _, c := range containers {
		cm := c.(map[string]any)
		if cm["name"] != "gpu-kubelet-plugin" {
			continue
		}
		found = true
		args, _, _ := unstructured.NestedStringSlice(cm, "args")
		for _, want := range []string{"--driver-root=/driver-root", "--driver-root-host-path=" + hostPath} {
			if !slices.Contains(args, want) {
				t.Errorf("gpu-kubelet-plugin args %v lack %s", args, want)
			}
		}
		mounts, _, _ := unstructured.NestedSlice(cm, "volumeMounts")
		if !slices.ContainsFunc(mounts, func(m any) bool {
			mm := m.(map[string]any)
			return mm["name"] == "driver-root" && mm["mountPath"] == "/driver-root"
		}) {
			t.Errorf("gpu-kubelet-plugin does not mount the driver-root volume at /driver-root: %v", mounts)
		}
	}
	if !found {
		t.Fatal("no gpu-kubelet-plugin container")
	}
}
