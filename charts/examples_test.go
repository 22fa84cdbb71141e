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
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The quota example limits ComputeDomains per namespace by object count, under the resource name the API
// server counts them by.
func TestComputeDomainQuotaExample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir, "examples", "computedomain-quota.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var q corev1.ResourceQuota
	if err := yaml.UnmarshalStrict(data, &q); err != nil {
		t.Fatalf("the example is not a ResourceQuota: %v", err)
	}
	limit, ok := q.Spec.Hard["count/computedomains.resource.nvidia.com"]
	if q.Kind != "ResourceQuota" || !ok || limit.Value() <= 0 || limit.Value() >= 2047 {
		t.Errorf("example %+v: want a ResourceQuota with count/computedomains.resource.nvidia.com between 1 and 2,046", q)
	}
}
