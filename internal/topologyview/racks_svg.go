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
	"fmt"
	"io"
	"strings"
)

// SVG layout, in pixels.
const (
	svgMargin      = 16
	svgRackWidth   = 240
	svgRackGap     = 24
	svgHeaderH     = 44
	svgTrayH       = 22
	svgTrayGap     = 4
	svgLegendLineH = 20
	svgMinWidth    = 520
)

// Tray fills and strokes that are not a holder's color.
const (
	svgFreeFill       = "#ffffff"
	svgNotHeldFill    = "#d9d9d9"
	svgStroke         = "#555555"
	svgUnhealthyColor = "#d62728"
	svgIMEXColor      = "#ff7f0e"
)

// WriteRacksSVG draws the racks view: one column per clique (rack) with its trays top to bottom, each tray filled
// with the color of the domain or workload holding it (white when free, grey when held by nothing but not free),
// hatched when cordoned, outlined red for a node taint or unhealthy GPU and dashed orange when its IMEX daemon is
// not ready; a legend of the holders' colors below. Every tray's rect carries data-node, data-holder and
// data-marks attributes for tools.
func WriteRacksSVG(w io.Writer, r *Racks) error {
	keys := map[holderID]Holder{}
	for _, h := range r.Holders {
		keys[h.id()] = h
	}
	maxTrays := 0
	for _, c := range r.Cliques {
		maxTrays = max(maxTrays, len(c.Trays))
	}
	racksH := svgHeaderH + maxTrays*(svgTrayH+svgTrayGap)
	legendLines := len(r.Holders) + 3
	width := max(svgMinWidth, 2*svgMargin+len(r.Cliques)*svgRackWidth+max(0, len(r.Cliques)-1)*svgRackGap)
	height := 2*svgMargin + racksH + svgLegendLineH + legendLines*svgLegendLineH

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	b.WriteString(`<defs><pattern id="cordoned" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)">` +
		`<line x1="0" y1="0" x2="0" y2="6" stroke="#333333" stroke-width="2"/></pattern></defs>` + "\n")
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)

	for i, c := range r.Cliques {
		x := svgMargin + i*(svgRackWidth+svgRackGap)
		fmt.Fprintf(&b, `<g class="clique" data-clique="%s">`+"\n", esc(c.ID))
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="bold">%s<title>%s</title></text>`+"\n", x, svgMargin+14, esc(middleTruncate(cliqueName(c.ID), 34)), esc(cliqueName(c.ID)))
		fmt.Fprintf(&b, `<text x="%d" y="%d">%d of %d trays free</text>`+"\n", x, svgMargin+30, c.FreeTrays, c.TotalTrays)
		for j, t := range c.Trays {
			y := svgMargin + svgHeaderH + j*(svgTrayH+svgTrayGap)
			writeTraySVG(&b, t, keys, x, y)
		}
		b.WriteString("</g>\n")
	}

	y := svgMargin + racksH + svgLegendLineH
	fmt.Fprintf(&b, `<g class="legend"><text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", svgMargin, y, esc(r.summary()))
	for i, h := range r.Holders {
		ly := y + (i+1)*svgLegendLineH
		fmt.Fprintf(&b, `<rect class="swatch" data-holder="%s" x="%d" y="%d" width="14" height="14" fill="%s" stroke="%s"/>`, esc(h.Ref()), svgMargin, ly-11, h.Color, svgStroke)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s  %s %s (%s)</text>`+"\n", svgMargin+20, ly, esc(h.Key), esc(h.Kind), esc(h.Ref()), plural(h.Trays, "tray"))
	}
	ly := y + (len(r.Holders)+1)*svgLegendLineH
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="14" fill="%s" stroke="%s"/><text x="%d" y="%d">free</text>`, svgMargin, ly-11, svgFreeFill, svgStroke, svgMargin+20, ly)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="14" fill="%s" stroke="%s"/><text x="%d" y="%d">held by nothing, not free</text>`, svgMargin+70, ly-11, svgNotHeldFill, svgStroke, svgMargin+90, ly)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="14" fill="url(#cordoned)" stroke="%s"/><text x="%d" y="%d">cordoned</text>`+"\n", svgMargin+250, ly-11, svgStroke, svgMargin+270, ly)
	ly += svgLegendLineH
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="14" fill="none" stroke="%s" stroke-width="2.5"/><text x="%d" y="%d">node taint or unhealthy GPU</text>`, svgMargin, ly-11, svgUnhealthyColor, svgMargin+20, ly)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="14" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="4 2"/><text x="%d" y="%d">IMEX daemon not ready</text>`+"\n", svgMargin+250, ly-11, svgIMEXColor, svgMargin+270, ly)
	b.WriteString("</g>\n</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// writeTraySVG draws one tray at x, y.
func writeTraySVG(b *bytes.Buffer, t Tray, holders map[holderID]Holder, x, y int) {
	fill, holder, label := svgNotHeldFill, "", "not free"
	switch {
	case len(t.Holders) > 0:
		h := holders[t.Holders[0].id()]
		fill, holder, label = h.Color, h.Ref(), h.Key+" "+h.Ref()
		if len(t.Holders) > 1 {
			label += fmt.Sprintf(" +%d", len(t.Holders)-1)
		}
	case t.Free:
		fill, label = svgFreeFill, "free"
	}
	stroke, strokeWidth, dash := svgStroke, "1", ""
	switch {
	case len(t.Taints) > 0 || t.UnhealthyGPUs > 0:
		stroke, strokeWidth = svgUnhealthyColor, "2.5"
	case t.IMEX == IMEXNotReady || t.IMEX == IMEXMissing:
		stroke, strokeWidth, dash = svgIMEXColor, "2", ` stroke-dasharray="4 2"`
	}
	var marks []string
	for _, n := range trayNotes(t, nil) {
		marks = append(marks, strings.TrimPrefix(n, t.Node+" "))
	}
	fmt.Fprintf(b, `<rect class="tray" data-node="%s" data-holder="%s" data-marks="%s" x="%d" y="%d" width="%d" height="%d" rx="3" fill="%s" stroke="%s" stroke-width="%s"%s>`,
		esc(t.Node), esc(holder), esc(trayMarks(t)), x, y, svgRackWidth, svgTrayH, fill, stroke, strokeWidth, dash)
	fmt.Fprintf(b, `<title>%s</title></rect>`+"\n", esc(strings.Join(append([]string{t.Node + ": " + label}, marks...), "\n")))
	if t.Cordoned {
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" rx="3" fill="url(#cordoned)" opacity="0.5"/>`+"\n", x, y, svgRackWidth, svgTrayH)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d">%s</text><text x="%d" y="%d" text-anchor="end">%s</text>`+"\n",
		x+6, y+15, esc(t.Node), x+svgRackWidth-6, y+15, esc(truncate(label, 28)))
}

// trayMarks are the tray's marks, space separated: cordoned, tainted, unhealthy-gpu, imex-not-ready, shared.
func trayMarks(t Tray) string {
	var m []string
	if t.Cordoned {
		m = append(m, "cordoned")
	}
	if len(t.Taints) > 0 {
		m = append(m, "tainted")
	}
	if t.UnhealthyGPUs > 0 {
		m = append(m, "unhealthy-gpu")
	}
	if t.IMEX == IMEXNotReady || t.IMEX == IMEXMissing {
		m = append(m, "imex-not-ready")
	}
	if len(t.Holders) > 1 {
		m = append(m, "shared")
	}
	return strings.Join(m, " ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// middleTruncate shortens s to n characters by cutting its middle, keeping the clique's number at the end.
func middleTruncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head := (n - 1) / 2
	return s[:head] + "…" + s[len(s)-(n-1-head):]
}

// esc escapes text for an SVG attribute or element.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
