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
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	controller "github.com/computedomain-operator/computedomain-operator/controllers/computedomain"
	cdplugin "github.com/computedomain-operator/computedomain-operator/kubeletplugin/computedomain"
	gpuplugin "github.com/computedomain-operator/computedomain-operator/kubeletplugin/gpu"
	"github.com/computedomain-operator/computedomain-operator/metering"
)

// dashboardFile is the dashboard the chart ships.
var dashboardFile = filepath.Join(chartDir, "dashboards", "computedomain-operator.json")

// descRecorder is a prometheus.Registerer that keeps the names of the metrics registered with it.
type descRecorder struct{ names map[string]bool }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *descRecorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = true
		}
	}
	return nil
}

func (r *descRecorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = r.Register(c)
	}
}

func (r *descRecorder) Unregister(prometheus.Collector) bool { return false }

// registeredMetrics are the metrics our components register, by their own constructors: the controller, both
// kubelet plugins and the metering component.
func registeredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	r := &descRecorder{names: map[string]bool{}}
	if _, err := controller.NewMetrics(r); err != nil {
		t.Fatal(err)
	}
	gpuplugin.NewMetrics(r)
	cdplugin.NewMetrics(r)
	r.MustRegister(metering.Collector{})
	if len(r.names) < 10 {
		t.Fatalf("found only %d metrics registered by our components: %v", len(r.names), r.names)
	}
	return r.names
}

// promQLNoise are the parts of an expression that name no metric: strings, label matchers, range and offset
// selectors, the label lists of by, without, on and ignoring, and numbers and durations.
var promQLNoise = []*regexp.Regexp{
	regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`),
	regexp.MustCompile(`\{[^}]*\}`),
	regexp.MustCompile(`\[[^\]]*\]`),
	regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`),
	regexp.MustCompile(`\b[0-9][0-9a-zA-Z_.]*`),
}

var (
	promQLIdentifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*\s*\(?`)
	promQLKeywords   = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan"}
)

// metricNames are the metric names an expression reads: its identifiers that are not functions (followed by a
// parenthesis), keywords or numbers.
func metricNames(expr string) []string {
	for _, re := range promQLNoise {
		expr = re.ReplaceAllString(expr, " ")
	}
	var out []string
	for _, id := range promQLIdentifier.FindAllString(expr, -1) {
		if strings.HasSuffix(id, "(") || slices.Contains(promQLKeywords, strings.ToLower(strings.TrimSpace(id))) {
			continue
		}
		out = append(out, strings.TrimSpace(id))
	}
	return out
}

func TestMetricNamesOfPromQL(t *testing.T) {
	cases := map[string]struct {
		expr string
		want []string
	}{
		"a quantile over buckets": {
			expr: `histogram_quantile(0.95, sum by (le, outcome) (rate(x_seconds_bucket{outcome=~"refused|error"}[$__rate_interval])))`,
			want: []string{"x_seconds_bucket"},
		},
		"a ratio of two metrics with offset": {
			expr: `sum(rate(a_sum[5m])) / sum(rate(a_count[5m] offset 1h)) > bool 0`,
			want: []string{"a_sum", "a_count"},
		},
		"a label value that looks like a metric": {
			expr: `sum without (node) (b{team="not_a_metric"}) or on (team) c`,
			want: []string{"b", "c"},
		},
		"time() is a function": {expr: `time() - min(d_timestamp_seconds)`, want: []string{"d_timestamp_seconds"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := metricNames(tc.expr); !slices.Equal(got, tc.want) {
				t.Errorf("metricNames(%s) = %v, want %v", tc.expr, got, tc.want)
			}
		})
	}
}

// dashboardPanel is a Grafana panel: its queries, and a row's panels.
type dashboardPanel struct {
	Title   string `json:"title"`
	Type    string `json:"type"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"`
}

// Every query of the dashboard names only metrics our components register, so renaming a metric fails here
// until the dashboard follows.
func TestDashboardQueriesNameOurMetrics(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []dashboardPanel `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	ours := registeredMetrics(t)
	// A histogram is queried through its series.
	known := func(name string) bool {
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && ours[base] {
				return true
			}
		}
		return false
	}
	var panels []dashboardPanel
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			panels = append(panels, p)
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	used := map[string]bool{}
	queries := 0
	for _, p := range panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			queries++
			names := metricNames(target.Expr)
			if len(names) == 0 {
				t.Errorf("panel %q: the query %s names no metric", p.Title, target.Expr)
			}
			for _, n := range names {
				if !known(n) {
					t.Errorf("panel %q: the query %s reads %s, which none of our components registers", p.Title, target.Expr, n)
				}
				used[n] = true
			}
		}
	}
	// The panels the issue asks for: formation time, prepare/unprepare latency and errors, devices by state,
	// channels per clique, usage per team.
	for _, want := range []string{
		"computedomain_formation_seconds_bucket",
		"gpu_kubelet_plugin_prepare_duration_seconds_bucket",
		"gpu_kubelet_plugin_unprepare_duration_seconds_bucket",
		"gpu_kubelet_plugin_prepare_errors_total",
		"gpu_kubelet_plugin_unprepare_errors_total",
		"gpu_kubelet_plugin_devices",
		"computedomain_clique_channels",
		"computedomain_metering_billed_total",
	} {
		if !used[want] {
			t.Errorf("no panel reads %s", want)
		}
	}
	t.Logf("%d queries over %d panels read %d metrics", queries, len(panels), len(used))
}

func TestDashboardIsOffByDefault(t *testing.T) {
	for _, o := range renderChart(t, "cdo") {
		if strings.Contains(o.GetName(), "grafana-dashboard") {
			t.Errorf("%s %s rendered with the default values", o.GetKind(), o.GetName())
		}
	}
}

// The ConfigMap carries the sidecar's label and the dashboard file as it is.
func TestDashboardConfigMapCarriesTheSidecarLabelAndTheFile(t *testing.T) {
	want, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		args          []string
		wantNamespace string
		wantLabel     [2]string
	}{
		"the defaults": {
			args:          []string{"--set", "dashboards.grafana.enabled=true"},
			wantNamespace: "cdo", wantLabel: [2]string{"grafana_dashboard", "1"},
		},
		"another namespace and label": {
			args: []string{"--set", "dashboards.grafana.enabled=true", "--set", "dashboards.grafana.namespace=monitoring",
				"--set", "dashboards.grafana.labels.grafana_dashboard=null", "--set-string", "dashboards.grafana.labels.dashboards=grafana"},
			wantNamespace: "monitoring", wantLabel: [2]string{"dashboards", "grafana"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cms := named(byKind(renderChart(t, "cdo", tc.args...), "ConfigMap"), "cdo-grafana-dashboard")
			if len(cms) != 1 {
				t.Fatalf("%d ConfigMaps cdo-grafana-dashboard, want 1", len(cms))
			}
			cm := cms[0]
			if cm.GetNamespace() != tc.wantNamespace || cm.GetLabels()[tc.wantLabel[0]] != tc.wantLabel[1] {
				t.Errorf("ConfigMap in namespace %s with labels %v, want namespace %s and %s=%s", cm.GetNamespace(), cm.GetLabels(), tc.wantNamespace, tc.wantLabel[0], tc.wantLabel[1])
			}
			got, _, _ := unstructured.NestedString(cm.Object, "data", "computedomain-operator.json")
			if got != strings.TrimRight(string(want), "\n") {
				t.Errorf("the ConfigMap's dashboard is not %s", dashboardFile)
			}
		})
	}
}
