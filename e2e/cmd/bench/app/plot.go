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
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"os"
	"slices"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// runPlot draws the figures of bench formation --json files: per phase, the median over the runs against the
// domain's size.
func runPlot(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench plot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "formation.png", "PNG file to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("bench plot: name at least one bench formation --json file")
	}
	var results []formationJSON
	for _, path := range fs.Args() {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var r formationJSON
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(r.Runs) == 0 || r.Nodes < 1 {
			return fmt.Errorf("%s: no runs", path)
		}
		results = append(results, r)
	}
	p, err := formationPlot(results)
	if err != nil {
		return err
	}
	if err := p.Save(8*vg.Inch, 5*vg.Inch, *out); err != nil {
		return fmt.Errorf("--out %s: %w", *out, err)
	}
	_, _ = fmt.Fprintf(stdout, "wrote %s (%d result files)\n", *out, len(results))
	return nil
}

// formationPhases are the plotted phases of a formation, each the median over a result's runs.
var formationPhases = []struct {
	name  string
	value func(formationPoint) float64
	dash  []vg.Length
}{
	{"Job → all pods bound", func(p formationPoint) float64 { return p.Bound }, []vg.Length{vg.Points(2), vg.Points(2)}},
	{"last pod bound → Ready", func(p formationPoint) float64 { return p.BoundToReady }, nil},
	{"last pod bound → all pods Running", func(p formationPoint) float64 { return p.BoundToRunning }, []vg.Length{vg.Points(1), vg.Points(3)}},
	{"Job → domain Ready", func(p formationPoint) float64 { return p.Ready }, []vg.Length{vg.Points(6), vg.Points(2)}},
}

// formationPlot is formation time against domain size: one line per phase.
func formationPlot(results []formationJSON) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "ComputeDomain formation in the simulated cluster (median of runs)"
	p.X.Label.Text = "domain size (nodes, one pod each)"
	p.Y.Label.Text = "seconds"
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	rs := slices.Clone(results)
	sort.Slice(rs, func(a, b int) bool { return rs[a].Nodes < rs[b].Nodes })
	colors := []color.Color{color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}}
	for i, phase := range formationPhases {
		pts := make(plotter.XYs, len(rs))
		for j, r := range rs {
			vals := make([]float64, len(r.Runs))
			for k, run := range r.Runs {
				vals[k] = phase.value(run)
			}
			pts[j] = plotter.XY{X: float64(r.Nodes), Y: median(vals)}
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		line.Color = colors[i%len(colors)]
		line.Dashes = phase.dash
		points.Color = colors[i%len(colors)]
		points.Shape = draw.CircleGlyph{}
		p.Add(line, points)
		p.Legend.Add(phase.name, line, points)
	}
	return p, nil
}
