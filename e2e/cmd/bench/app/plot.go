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
	"gonum.org/v1/plot/vg/vgimg"
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
	if err := saveFormationPlots(results, *out); err != nil {
		return fmt.Errorf("--out %s: %w", *out, err)
	}
	_, _ = fmt.Fprintf(stdout, "wrote %s (%d result files)\n", *out, len(results))
	return nil
}

// formationPhases are the plotted phases of a formation, each the median over a result's runs.
var formationPhases = []phase{
	{"Job → all pods bound", func(p formationPoint) float64 { return p.Bound }, []vg.Length{vg.Points(2), vg.Points(2)}},
	{"last pod bound → Ready", func(p formationPoint) float64 { return p.BoundToReady }, nil},
	{"last pod bound → all pods Running", func(p formationPoint) float64 { return p.BoundToRunning }, []vg.Length{vg.Points(1), vg.Points(3)}},
	{"Job → domain Ready", func(p formationPoint) float64 { return p.Ready }, []vg.Length{vg.Points(6), vg.Points(2)}},
}

// perNodePhases are the costs per node of a formation, in milliseconds per node: what grows faster than the
// domain shows as a rising line. A phase without figures in any file (the controller's CPU before issue 27) is
// left out.
var perNodePhases = []phase{
	{"Job → all pods Running", func(p formationPoint) float64 { return p.Running }, []vg.Length{vg.Points(2), vg.Points(2)}},
	{"controller CPU", func(p formationPoint) float64 { return p.ControllerCPU }, nil},
}

type phase struct {
	name  string
	value func(formationPoint) float64
	dash  []vg.Length
}

// saveFormationPlots writes one PNG of two panels: formation time against domain size, and the cost per node.
func saveFormationPlots(results []formationJSON, path string) error {
	rs := slices.Clone(results)
	sort.Slice(rs, func(a, b int) bool { return rs[a].Nodes < rs[b].Nodes })
	times, err := formationPlot(rs)
	if err != nil {
		return err
	}
	perNode, err := perNodePlot(rs)
	if err != nil {
		return err
	}
	img := vgimg.New(14*vg.Inch, 5*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(20), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(4)}
	canvases := plot.Align([][]*plot.Plot{{times, perNode}}, tiles, dc)
	times.Draw(canvases[0][0])
	perNode.Draw(canvases[0][1])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

var phaseColors = []color.Color{color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}}

// sizePlot is a plot against domain size (nodes), on a base-2 log axis with a tick at each size measured.
func sizePlot(title, yLabel string, rs []formationJSON) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "domain size (nodes, one pod each; log scale)"
	p.Y.Label.Text = yLabel
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	p.X.Scale = plot.LogScale{}
	var ticks plot.ConstantTicks
	for _, r := range rs {
		ticks = append(ticks, plot.Tick{Value: float64(r.Nodes), Label: fmt.Sprint(r.Nodes)})
	}
	p.X.Tick.Marker = ticks
	return p
}

// addPhases draws one line per phase: the median over each result's runs of value, divided by div(result).
func addPhases(p *plot.Plot, rs []formationJSON, phases []phase, div func(formationJSON) float64) error {
	for i, ph := range phases {
		pts := make(plotter.XYs, len(rs))
		drawn := false
		for j, r := range rs {
			vals := make([]float64, len(r.Runs))
			for k, run := range r.Runs {
				vals[k] = ph.value(run)
			}
			pts[j] = plotter.XY{X: float64(r.Nodes), Y: median(vals) / div(r)}
			drawn = drawn || pts[j].Y != 0
		}
		if !drawn {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		line.Color = phaseColors[i%len(phaseColors)]
		line.Dashes = ph.dash
		points.Color = phaseColors[i%len(phaseColors)]
		points.Shape = draw.CircleGlyph{}
		p.Add(line, points)
		p.Legend.Add(ph.name, line, points)
	}
	return nil
}

// formationPlot is formation time against domain size: one line per phase.
func formationPlot(rs []formationJSON) (*plot.Plot, error) {
	p := sizePlot("ComputeDomain formation in the simulated cluster (median of runs)", "seconds", rs)
	return p, addPhases(p, rs, formationPhases, func(formationJSON) float64 { return 1 })
}

// perNodePlot is the cost per node against domain size.
func perNodePlot(rs []formationJSON) (*plot.Plot, error) {
	p := sizePlot("cost per node (median of runs)", "milliseconds per node", rs)
	return p, addPhases(p, rs, perNodePhases, func(r formationJSON) float64 { return float64(r.Nodes) / 1000 })
}
