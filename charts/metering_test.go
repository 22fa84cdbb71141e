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
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// rules lists a rendered Role or ClusterRole's rules as "group/resource: verbs".
func rules(t *testing.T, role *unstructured.Unstructured) []string {
	t.Helper()
	list, _, _ := unstructured.NestedSlice(role.Object, "rules")
	var out []string
	for _, r := range list {
		m := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(m, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(m, "resources")
		verbs, _, _ := unstructured.NestedStringSlice(m, "verbs")
		for _, g := range groups {
			for _, res := range resources {
				out = append(out, g+"/"+res+": "+strings.Join(verbs, ","))
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestMeteringIsOffByDefault(t *testing.T) {
	for _, o := range renderChart(t, "cdo") {
		if strings.Contains(o.GetName(), "metering") {
			t.Errorf("%s %s rendered with the default values", o.GetKind(), o.GetName())
		}
	}
}

// The meter watches claims (to check every billed interval's claim) and raises events on the plugin
// pods whose ledgers it refuses; it writes nothing else.
func TestMeteringReadsOnlyPluginPodsNamespacesAndClaims(t *testing.T) {
	objs := renderChart(t, "cdo", "-f", filepath.Join(chartDir, "ci", "metering-values.yaml"))
	cluster := named(byKind(objs, "ClusterRole"), "compute-domain-metering")
	ns := named(byKind(objs, "Role"), "compute-domain-metering")
	if len(cluster) != 1 || len(ns) != 1 {
		t.Fatalf("%d ClusterRoles and %d Roles named compute-domain-metering, want one each", len(cluster), len(ns))
	}
	if diff := cmp.Diff([]string{"/namespaces: get", "resource.k8s.io/resourceclaims: get,list,watch"}, rules(t, cluster[0])); diff != "" {
		t.Errorf("cluster-wide rules (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/events: create,patch", "/pods: list"}, rules(t, ns[0])); diff != "" || ns[0].GetNamespace() != "cdo" {
		t.Errorf("rules in namespace %s (-want +got):\n%s", ns[0].GetNamespace(), diff)
	}

	deps := named(byKind(objs, "Deployment"), "compute-domain-metering")
	if len(deps) != 1 {
		t.Fatalf("%d metering Deployments, want 1", len(deps))
	}
	containers, _, _ := unstructured.NestedSlice(deps[0].Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	for _, want := range []string{
		"--plugin-port=9090", // the GPU plugin's metrics port, where it serves /usage
		"--plugin-selector=app.kubernetes.io/name=compute-domain-kubelet-plugin,app.kubernetes.io/instance=cdo",
		"--team-label=team", // the sharing policy's
		"--billing-unit=mig.nvidia.com=mig-slice-seconds",
		"--pull-interval=10s",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("metering args %v lack %s", args, want)
		}
	}
	// The plugin pods the selector names are the DaemonSet's.
	ds := named(byKind(objs, "DaemonSet"), "compute-domain-kubelet-plugin")
	labels, _, _ := unstructured.NestedStringMap(ds[0].Object, "spec", "template", "metadata", "labels")
	if labels["app.kubernetes.io/name"] != "compute-domain-kubelet-plugin" || labels["app.kubernetes.io/instance"] != "cdo" {
		t.Errorf("plugin pod labels %v do not match the metering selector", labels)
	}
}

func TestMeteringRefusesBadValues(t *testing.T) {
	cases := map[string]struct {
		set  []string
		want string
	}{
		"an unknown billing unit":         {set: []string{"metering.enabled=true", "metering.billingUnits.gpu\\.nvidia\\.com=gpu-hours"}, want: "/metering/billingUnits/gpu.nvidia.com"},
		"a pull interval in minutes":      {set: []string{"metering.enabled=true", "metering.pullInterval=5 minutes"}, want: "/metering/pullInterval"},
		"metering without the GPU plugin": {set: []string{"metering.enabled=true", "kubeletPlugin.gpu.enabled=false"}, want: "metering.enabled needs kubeletPlugin.enabled and kubeletPlugin.gpu.enabled"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := []string{"template", "cdo", chartDir, "--kube-version", kubeVersion}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			out, err := exec.Command(helmBinary(t), args...).CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Errorf("helm template %v: %v, want an error naming %q:\n%s", tc.set, err, tc.want, out)
			}
		})
	}
}
