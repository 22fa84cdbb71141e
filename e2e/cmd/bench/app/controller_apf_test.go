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

package app

import (
	"math"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The API server splits a call's latency over series by group, version, scope and component: the
// benchmark sums them per verb, resource and subresource, and keeps status patches apart from
// metadata patches.
func TestControllerCallLatenciesSumSeriesAndKeepSubresourcesApart(t *testing.T) {
	const exposition = `# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{component="apiserver",resource="computedomains",scope="resource",subresource="",verb="PATCH",le="0.01"} 6
apiserver_request_duration_seconds_bucket{component="apiserver",resource="computedomains",scope="resource",subresource="",verb="PATCH",le="0.1"} 10
apiserver_request_duration_seconds_bucket{component="apiserver",resource="computedomains",scope="resource",subresource="",verb="PATCH",le="+Inf"} 10
apiserver_request_duration_seconds_sum{component="apiserver",resource="computedomains",scope="resource",subresource="",verb="PATCH"} 0.3
apiserver_request_duration_seconds_count{component="apiserver",resource="computedomains",scope="resource",subresource="",verb="PATCH"} 10
apiserver_request_duration_seconds_bucket{component="other",resource="computedomains",scope="resource",subresource="",verb="PATCH",le="0.01"} 4
apiserver_request_duration_seconds_bucket{component="other",resource="computedomains",scope="resource",subresource="",verb="PATCH",le="0.1"} 10
apiserver_request_duration_seconds_bucket{component="other",resource="computedomains",scope="resource",subresource="",verb="PATCH",le="+Inf"} 10
apiserver_request_duration_seconds_sum{component="other",resource="computedomains",scope="resource",subresource="",verb="PATCH"} 0.5
apiserver_request_duration_seconds_count{component="other",resource="computedomains",scope="resource",subresource="",verb="PATCH"} 10
apiserver_request_duration_seconds_bucket{component="apiserver",resource="computedomains",scope="resource",subresource="status",verb="PATCH",le="0.01"} 0
apiserver_request_duration_seconds_bucket{component="apiserver",resource="computedomains",scope="resource",subresource="status",verb="PATCH",le="0.1"} 0
apiserver_request_duration_seconds_bucket{component="apiserver",resource="computedomains",scope="resource",subresource="status",verb="PATCH",le="+Inf"} 5
apiserver_request_duration_seconds_sum{component="apiserver",resource="computedomains",scope="resource",subresource="status",verb="PATCH"} 5
apiserver_request_duration_seconds_count{component="apiserver",resource="computedomains",scope="resource",subresource="status",verb="PATCH"} 5
apiserver_request_duration_seconds_bucket{component="apiserver",resource="resourceclaims",scope="resource",subresource="",verb="POST",le="0.01"} 3
apiserver_request_duration_seconds_bucket{component="apiserver",resource="resourceclaims",scope="resource",subresource="",verb="POST",le="0.1"} 3
apiserver_request_duration_seconds_bucket{component="apiserver",resource="resourceclaims",scope="resource",subresource="",verb="POST",le="+Inf"} 3
apiserver_request_duration_seconds_sum{component="apiserver",resource="resourceclaims",scope="resource",subresource="",verb="POST"} 0.01
apiserver_request_duration_seconds_count{component="apiserver",resource="resourceclaims",scope="resource",subresource="",verb="POST"} 3
`
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	got := controllerCallLatencies(families)
	if len(got) != 2 {
		t.Fatalf("got %d calls, want the metadata and the status patch of computedomains only (the writer's resourceclaims are not the controller's):\n%s", len(got), got)
	}
	patch, status := got[0], got[1]
	if patch.call != (controllerCall{"PATCH", "computedomains", ""}) || patch.count != 20 {
		t.Errorf("first call %+v, want 20 PATCH computedomains summed over both series", patch)
	}
	// 10 of 20 within 10 ms: the median is the first bucket's bound, the p99 near the second's.
	if math.Abs(patch.p50-0.01) > 1e-9 || patch.p99 < 0.09 || patch.p99 > 0.1 {
		t.Errorf("PATCH p50 %g s, p99 %g s: want 0.01 and within (0.09, 0.1]", patch.p50, patch.p99)
	}
	if status.call.subresource != "status" || status.count != 5 || status.p50 != 0.1 {
		t.Errorf("status call %+v: want 5 status patches, all beyond 0.1 s (p50 at the last finite bound)", status)
	}
}
