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
	"fmt"
	"io"
	"strings"
)

// Cell marks of the text view, after the holder's key.
const (
	markFree      = "."
	markNotHeld   = "-"
	markCordoned  = "x"
	markUnhealthy = "!"
	markIMEX      = "~"
	markShared    = "+"
)

// noCliqueName is how the views name the nodes without a clique label.
const noCliqueName = "(no clique)"

// WriteRacksText prints the racks view: one row per clique with one cell per tray, the free trays, the holders'
// keys, and a line for every tray that is shared or cannot take work.
func WriteRacksText(out io.Writer, r *Racks) error {
	return writeText(out, func(w *bytes.Buffer) { writeRacks(w, r) })
}

func writeRacks(w *bytes.Buffer, r *Racks) {
	keys := map[holderID]string{}
	width := 1
	for _, h := range r.Holders {
		keys[h.id()] = h.Key
		width = max(width, len(h.Key))
	}
	rows := make([][]string, len(r.Cliques))
	for i, c := range r.Cliques {
		cells := make([]string, len(c.Trays))
		for j, t := range c.Trays {
			cells[j] = trayCell(t, keys, width)
		}
		rows[i] = []string{cliqueName(c.ID), fmt.Sprintf("%d/%d", c.FreeTrays, c.TotalTrays), strings.Join(cells, " ")}
	}
	writeTable(w, "", []string{"CLIQUE", "FREE", "TRAYS"}, rows)
	fmt.Fprintf(w, "\n%s\n", r.summary())

	if len(r.Holders) > 0 {
		fmt.Fprintln(w)
		rows := make([][]string, len(r.Holders))
		for i, h := range r.Holders {
			rows[i] = []string{h.Key, h.Kind, h.Ref(), fmt.Sprint(h.Trays)}
		}
		writeTable(w, "", []string{"KEY", "KIND", "NAME", "TRAYS"}, rows)
	}
	fmt.Fprintf(w, "\ncells: KEY holds the tray, %s free, %s held by nothing but not free; after it: %s several holders, "+
		"%s cordoned, %s node taint or unhealthy GPU, %s IMEX daemon not ready\n",
		markFree, markNotHeld, markShared, markCordoned, markUnhealthy, markIMEX)

	var notes []string
	for _, c := range r.Cliques {
		for _, t := range c.Trays {
			notes = append(notes, trayNotes(t, keys)...)
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "\ntrays to look at:")
		for _, n := range notes {
			fmt.Fprintln(w, "  "+n)
		}
	}
}

func cliqueName(id string) string {
	if id == "" {
		return noCliqueName
	}
	return id
}

// trayCell is a tray's cell: the first holder's key (or the free / not-held mark), padded to width, and the
// tray's one most important mark.
func trayCell(t Tray, keys map[holderID]string, width int) string {
	main := markNotHeld
	switch {
	case len(t.Holders) > 0:
		main = keys[t.Holders[0].id()]
	case t.Free:
		main = markFree
	}
	return fmt.Sprintf("%-*s%s", width, main, trayMark(t))
}

// trayMark is the tray's most important mark: cordoned, then taint or unhealthy GPU, then IMEX, then shared.
func trayMark(t Tray) string {
	switch {
	case t.Cordoned:
		return markCordoned
	case len(t.Taints) > 0 || t.UnhealthyGPUs > 0:
		return markUnhealthy
	case t.IMEX == IMEXNotReady || t.IMEX == IMEXMissing:
		return markIMEX
	case len(t.Holders) > 1:
		return markShared
	}
	return " "
}

// trayNotes are the lines that say why a tray is marked.
func trayNotes(t Tray, keys map[holderID]string) []string {
	var out []string
	note := func(mark, format string, args ...any) {
		out = append(out, fmt.Sprintf("%s %s %s", t.Node, mark, fmt.Sprintf(format, args...)))
	}
	if t.Cordoned {
		note(markCordoned, "cordoned")
	}
	if len(t.Taints) > 0 {
		note(markUnhealthy, "node taints %s", strings.Join(t.Taints, ", "))
	}
	if t.UnhealthyGPUs > 0 {
		note(markUnhealthy, "%d of %d GPUs unhealthy: %s", t.UnhealthyGPUs, t.GPUs, strings.Join(t.UnhealthyReasons, "; "))
	}
	if t.IMEX == IMEXNotReady || t.IMEX == IMEXMissing {
		note(markIMEX, "IMEX daemon %s: %s", t.IMEX, t.IMEXMessage)
	}
	if len(t.Holders) > 1 {
		parts := make([]string, len(t.Holders))
		for i, h := range t.Holders {
			parts[i] = fmt.Sprintf("%s %s (%s)", keys[h.id()], h.Ref(), plural(h.GPUs, "GPU"))
		}
		note(markShared, "shared by %s", strings.Join(parts, ", "))
	}
	return out
}

// Ref is "namespace/name".
func (h TrayHolder) Ref() string { return h.Namespace + "/" + h.Name }

// summary counts the free trays of the shown rows: "5 of 13 trays free in 2 cliques and 1 tray without a clique".
func (r *Racks) summary() string {
	cliques, without := 0, 0
	for _, c := range r.Cliques {
		if c.ID == "" {
			without = c.TotalTrays
		} else {
			cliques++
		}
	}
	s := fmt.Sprintf("%d of %d trays free in %s", r.FreeTrays, r.TotalTrays, plural(cliques, "clique"))
	if without > 0 {
		s += fmt.Sprintf(" and %s without a clique", plural(without, "tray"))
	}
	return s
}

// plural is "1 clique", "2 cliques".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
