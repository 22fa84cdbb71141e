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
	"encoding/xml"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// svgElement is any element of an SVG document, with its attributes and children.
type svgElement struct {
	XMLName  xml.Name
	Attrs    []xml.Attr   `xml:",any,attr"`
	Children []svgElement `xml:",any"`
}

func (e svgElement) attr(name string) string {
	for _, a := range e.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// walk calls f for e and every element under it.
func (e svgElement) walk(f func(svgElement)) {
	f(e)
	for _, c := range e.Children {
		c.walk(f)
	}
}

// parsedSVG is what a test reads back from a racks picture: the tray rects by node and the legend's swatch
// fill by holder.
type parsedSVG struct {
	trays    map[string]svgElement
	swatches map[string]string
}

func renderAndParseSVG(t *testing.T, s *Snapshot, opts RacksOptions) parsedSVG {
	t.Helper()
	r, err := BuildRacks(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteRacks(&b, r, FormatSVG); err != nil {
		t.Fatal(err)
	}
	var root svgElement
	if err := xml.Unmarshal(b.Bytes(), &root); err != nil {
		t.Fatalf("the SVG does not parse as XML: %v\n%s", err, b.String())
	}
	if root.XMLName.Local != "svg" || root.XMLName.Space != "http://www.w3.org/2000/svg" {
		t.Fatalf("root element %v, want svg in the SVG namespace", root.XMLName)
	}
	out := parsedSVG{trays: map[string]svgElement{}, swatches: map[string]string{}}
	root.walk(func(e svgElement) {
		if e.XMLName.Local != "rect" {
			return
		}
		switch e.attr("class") {
		case "tray":
			if _, dup := out.trays[e.attr("data-node")]; dup {
				t.Errorf("tray %s drawn twice", e.attr("data-node"))
			}
			out.trays[e.attr("data-node")] = e
		case "swatch":
			out.swatches[e.attr("data-holder")] = e.attr("fill")
		}
	})
	return out
}

func TestRacksSVGDrawsEveryTrayWithItsHoldersColour(t *testing.T) {
	s := busyCluster()
	got := renderAndParseSVG(t, s, RacksOptions{})
	if len(got.trays) != len(s.Nodes) {
		t.Errorf("%d trays drawn, want one per node: %d", len(got.trays), len(s.Nodes))
	}
	fills := map[string]map[string]bool{}
	for node, e := range got.trays {
		holder := e.attr("data-holder")
		if fills[holder] == nil {
			fills[holder] = map[string]bool{}
		}
		fills[holder][e.attr("fill")] = true
		if holder != "" && got.swatches[holder] != e.attr("fill") {
			t.Errorf("tray %s of %s is filled %s, its legend swatch %s", node, holder, e.attr("fill"), got.swatches[holder])
		}
	}
	want := map[string]int{"team-a/train": 1, "team-b/infer": 1, "default/solo": 1, "default/spare": 1, "": 1}
	gotCount := map[string]int{}
	for holder, f := range fills {
		gotCount[holder] = len(f)
	}
	if diff := cmp.Diff(want, gotCount); diff != "" {
		t.Errorf("distinct fills per holder (-want +got):\n%s", diff)
	}
	if got.trays["rack0-6"].attr("fill") != svgFreeFill {
		t.Errorf("free tray rack0-6 filled %s, want %s", got.trays["rack0-6"].attr("fill"), svgFreeFill)
	}
	if got.trays["rack0-1"].attr("fill") == got.trays["rack1-1"].attr("fill") {
		t.Errorf("team-a/train and team-b/infer share the fill %s", got.trays["rack0-1"].attr("fill"))
	}
}

func TestRacksSVGKeepsADomainsColourWhateverElseIsShown(t *testing.T) {
	all := renderAndParseSVG(t, busyCluster(), RacksOptions{})
	alone := renderAndParseSVG(t, busyCluster(), RacksOptions{Domain: "train", DomainNamespace: "team-a"})
	if _, ok := alone.trays["rack1-1"]; ok {
		t.Errorf("the --domain filter drew rack1-1, a tray of another clique")
	}
	if a, b := all.trays["rack0-1"].attr("fill"), alone.trays["rack0-1"].attr("fill"); a != b || a == "" {
		t.Errorf("team-a/train is %q with every clique shown and %q with its own alone; want one non-empty color", a, b)
	}
}

func TestRacksSVGMarksTraysThatCannotTakeWork(t *testing.T) {
	got := renderAndParseSVG(t, unhealthyCluster(), RacksOptions{})
	cases := map[string]struct{ node, marks, stroke string }{
		"an unhealthy GPU is outlined red":             {node: "rack0-1", marks: "unhealthy-gpu", stroke: svgUnhealthyColor},
		"an IMEX daemon without peers is dashed":       {node: "rack0-2", marks: "imex-not-ready", stroke: svgIMEXColor},
		"a cordoned tray is marked cordoned":           {node: "rack0-3", marks: "cordoned", stroke: svgStroke},
		"a NoExecute node taint is outlined red":       {node: "rack0-4", marks: "tainted", stroke: svgUnhealthyColor},
		"a clique node without an IMEXNode is dashed":  {node: "rack0-5", marks: "imex-not-ready", stroke: svgIMEXColor},
		"a free tray has no marks and a plain outline": {node: "rack0-6", marks: "", stroke: svgStroke},
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			e, ok := got.trays[want.node]
			if !ok {
				t.Fatalf("no tray drawn for %s", want.node)
			}
			if e.attr("data-marks") != want.marks || e.attr("stroke") != want.stroke {
				t.Errorf("tray %s: marks %q stroke %s, want marks %q stroke %s", want.node, e.attr("data-marks"), e.attr("stroke"), want.marks, want.stroke)
			}
		})
	}
}
