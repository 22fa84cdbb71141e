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

package topologyview

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// docsPage is the page that shows the views; its examples are golden files, so they cannot rot. (This file
// sorts after golden_views_test.go, so one -update run rewrites the golden files first, then the page.)
const docsPage = "../../docs/topology-view.md"

// docsGoldenBlock is an example on the page: a marker naming the golden file, then a text block holding it.
var docsGoldenBlock = regexp.MustCompile("(?s)<!-- golden: ([a-z0-9.-]+) -->\n```text\n(.*?)```\n")

// docsPictures are the SVG files the page shows, each a copy of a golden file.
var docsPictures = map[string]string{
	"../../docs/topology-view/racks-busy.svg":      "racks-busy.svg",
	"../../docs/topology-view/racks-unhealthy.svg": "racks-unhealthy.svg",
}

func TestDocsPageShowsTheGoldenOutput(t *testing.T) {
	page, err := os.ReadFile(docsPage)
	if err != nil {
		t.Fatal(err)
	}
	readGolden := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name+".golden"))
		if err != nil {
			t.Fatalf("%s names the golden file %s: %v", docsPage, name, err)
		}
		return b
	}
	blocks := docsGoldenBlock.FindAllSubmatch(page, -1)
	if len(blocks) < 3 {
		t.Fatalf("%s has %d golden examples, want at least racks, an unhealthy rack and describe", docsPage, len(blocks))
	}
	if *update {
		page = docsGoldenBlock.ReplaceAllFunc(page, func(m []byte) []byte {
			name := docsGoldenBlock.FindSubmatch(m)[1]
			return []byte("<!-- golden: " + string(name) + " -->\n```text\n" + string(readGolden(string(name))) + "```\n")
		})
		if err := os.WriteFile(docsPage, page, 0o644); err != nil {
			t.Fatal(err)
		}
	} else {
		for _, b := range blocks {
			if want := readGolden(string(b[1])); !bytes.Equal(b[2], want) {
				t.Errorf("%s: the example %s is not the golden file's text (go test ./internal/topologyview -update rewrites it)", docsPage, b[1])
			}
		}
	}
	for doc, golden := range docsPictures {
		want := readGolden(golden)
		if *update {
			if err := os.WriteFile(doc, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got, err := os.ReadFile(doc); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not a copy of testdata/%s.golden (go test ./internal/topologyview -update rewrites it; read error: %v)", doc, golden, err)
		}
	}
}
