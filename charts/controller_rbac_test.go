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
)

// The controller creates no pods and no DaemonSets (the long-lived IMEX daemons are the chart's): a stolen
// controller token must not start privileged pods on the nodes. It may update pods (the clique placement
// fallback releases held pods, confined by the pod-release policy), never create them.
func TestControllerCannotCreateWorkloads(t *testing.T) {
	objs := renderChart(t, "computedomain-operator", "--set", "webhook.enabled=true", "--set", "webhook.podGroups=true")
	var checked int
	for _, kind := range []string{"ClusterRole", "Role"} {
		for _, role := range named(byKind(objs, kind), "compute-domain-controller") {
			checked++
			for _, rule := range rules(t, role) {
				resource, verbs, _ := strings.Cut(rule, ": ")
				for _, verb := range strings.Split(verbs, ",") {
					switch {
					case strings.HasPrefix(resource, "apps/") && verb != "get" && verb != "list" && verb != "watch":
						t.Errorf("%s compute-domain-controller may %s %s", kind, verb, resource)
					case (resource == "/pods" || resource == "batch/jobs") && (verb == "create" || verb == "*"):
						t.Errorf("%s compute-domain-controller may %s %s", kind, verb, resource)
					case verb == "*" || strings.HasSuffix(resource, "/*"):
						t.Errorf("%s compute-domain-controller has a wildcard rule: %s", kind, rule)
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no ClusterRole or Role compute-domain-controller rendered")
	}
}
