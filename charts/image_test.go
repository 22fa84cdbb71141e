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
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// dockerStage is one FROM ... AS name stage of the Dockerfile with its instructions (continuation lines joined).
type dockerStage struct {
	name         string
	instructions []string
}

// parseDockerfile splits the Dockerfile into stages; comments and blank lines are dropped.
func parseDockerfile(t *testing.T, path string) []dockerStage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var stages []dockerStage
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		if fields := strings.Fields(line); strings.EqualFold(fields[0], "FROM") {
			name := ""
			if len(fields) >= 4 && strings.EqualFold(fields[2], "AS") {
				name = fields[3]
			}
			stages = append(stages, dockerStage{name: name})
			return
		}
		if len(stages) > 0 {
			stages[len(stages)-1].instructions = append(stages[len(stages)-1].instructions, line)
		}
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(line)
		flush()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	flush()
	return stages
}

// cmdBinaries are the binaries of the repository: every cmd/<name>/main.go.
func cmdBinaries(t *testing.T) []string {
	t.Helper()
	mains, err := filepath.Glob(filepath.Join("..", "cmd", "*", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range mains {
		names = append(names, filepath.Base(filepath.Dir(m)))
	}
	if len(names) < 4 {
		t.Fatalf("found only %v under cmd/", names)
	}
	return names
}

// imageBinaries are the files the final stage copies from the build stage into /usr/bin.
func imageBinaries(t *testing.T, stages []dockerStage) []string {
	t.Helper()
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and a final stage", len(stages))
	}
	final := stages[len(stages)-1]
	var bins []string
	for _, ins := range final.instructions {
		fields := strings.Fields(ins)
		if !strings.EqualFold(fields[0], "COPY") || len(fields) < 3 || !strings.HasPrefix(fields[1], "--from=") {
			continue
		}
		if dest := fields[len(fields)-1]; dest != "/usr/bin/" {
			continue
		}
		for _, src := range fields[2 : len(fields)-1] {
			bins = append(bins, filepath.Base(src))
		}
	}
	slices.Sort(bins)
	return bins
}

func TestDockerfileShipsEveryBinary(t *testing.T) {
	stages := parseDockerfile(t, filepath.Join("..", "Dockerfile"))
	want := cmdBinaries(t)
	if diff := cmp.Diff(want, imageBinaries(t, stages)); diff != "" {
		t.Errorf("binaries in the final stage's /usr/bin (-cmd/*, +Dockerfile):\n%s", diff)
	}
	build := strings.Join(stages[0].instructions, "\n")
	for _, b := range want {
		if !strings.Contains(build, "./cmd/"+b) {
			t.Errorf("the build stage does not build ./cmd/%s", b)
		}
	}
	nonRoot := func(s string) bool {
		return strings.HasPrefix(s, "USER ") && !strings.Contains(s, "root") && !strings.HasPrefix(s, "USER 0")
	}
	if final := stages[len(stages)-1]; !slices.ContainsFunc(final.instructions, nonRoot) {
		t.Errorf("the final stage does not switch to a non-root USER")
	}
}

// containerCommands returns "<kind>/<name>/<container>" -> command of every container in the rendered objects.
func containerCommands(t *testing.T, objs []*unstructured.Unstructured) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, o := range objs {
		containers, found, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if err != nil {
			t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
		}
		if !found {
			continue
		}
		for _, c := range containers {
			cm, _ := c.(map[string]any)
			cmd, _, _ := unstructured.NestedStringSlice(cm, "command")
			name, _, _ := unstructured.NestedString(cm, "name")
			out[o.GetKind()+"/"+o.GetName()+"/"+name] = cmd
		}
	}
	return out
}

func TestChartRunsBinariesOfTheImage(t *testing.T) {
	image := imageBinaries(t, parseDockerfile(t, filepath.Join("..", "Dockerfile")))
	values, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil || len(values) == 0 {
		t.Fatalf("no values files under %s/ci: %v", chartDir, err)
	}
	for _, v := range values {
		t.Run(filepath.Base(v), func(t *testing.T) {
			cmds := containerCommands(t, renderChart(t, "computedomain-operator", "-f", v))
			if len(cmds) == 0 {
				t.Fatal("the chart renders no container")
			}
			for where, cmd := range cmds {
				if len(cmd) == 0 {
					t.Errorf("%s: no command; the image has no default for it", where)
					continue
				}
				if !slices.Contains(image, cmd[0]) {
					t.Errorf("%s runs %q, which the image does not have (it has %v)", where, cmd[0], image)
				}
			}
		})
	}
}

func TestKindValuesRunThePluginsWithMockNVML(t *testing.T) {
	objs := renderChart(t, "computedomain-operator", "-f", filepath.Join(chartDir, "ci", "kind-values.yaml"))
	ds := named(byKind(objs, "DaemonSet"), "compute-domain-kubelet-plugin")
	if len(ds) != 1 {
		t.Fatalf("want one kubelet-plugin DaemonSet, got %d", len(ds))
	}
	containers, _, _ := unstructured.NestedSlice(ds[0].Object, "spec", "template", "spec", "containers")
	if len(containers) != 2 {
		t.Fatalf("want the GPU and compute-domain plugin containers, got %d", len(containers))
	}
	for _, c := range containers {
		cm, _ := c.(map[string]any)
		args, _, _ := unstructured.NestedStringSlice(cm, "args")
		for _, want := range []string{"--nvml=mock", "--nvml-mock-profile=gb200-nvl72"} {
			if !slices.Contains(args, want) {
				t.Errorf("container %v: args %v lack %s", cm["name"], args, want)
			}
		}
	}
	if _, found, _ := unstructured.NestedMap(ds[0].Object, "spec", "template", "spec", "affinity"); found {
		t.Errorf("kind values keep the GPU-node affinity; kind nodes have no NVIDIA labels")
	}
}
