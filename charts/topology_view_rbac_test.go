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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/computedomain-operator/computedomain-operator/internal/topologyview"
)

func TestTopologyViewRoleIsOffByDefault(t *testing.T) {
	for _, o := range renderChart(t, "cdo") {
		if strings.Contains(o.GetName(), "topology-view") {
			t.Errorf("%s %s rendered with the default values", o.GetKind(), o.GetName())
		}
	}
}

// The plugin's users get exactly what kubectl computedomain lists, read-only, and the chart binds it to no one.
func TestTopologyViewRoleGrantsReadingWhatThePluginLists(t *testing.T) {
	objs := renderChart(t, "cdo", "--set", "topologyView.rbac.create=true")
	roles := named(byKind(objs, "ClusterRole"), "cdo-topology-view")
	if len(roles) != 1 {
		t.Fatalf("%d ClusterRoles cdo-topology-view, want 1", len(roles))
	}
	var want []string
	for _, r := range topologyview.ReadResources {
		want = append(want, r+": get,list")
	}
	if diff := cmp.Diff(want, rules(t, roles[0])); diff != "" {
		t.Errorf("rules (-what the plugin lists +granted):\n%s", diff)
	}
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, b := range byKind(objs, kind) {
			if ref, _, _ := unstructured.NestedString(b.Object, "roleRef", "name"); ref == "cdo-topology-view" {
				t.Errorf("%s %s binds cdo-topology-view; the chart binds it to no one", kind, b.GetName())
			}
		}
	}
}
