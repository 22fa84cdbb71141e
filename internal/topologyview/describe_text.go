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
	"time"
)

// WriteDescriptionText prints a domain's description: summary, what blocks it, cliques with their channels,
// slices and nodes, pods, conditions and recent events.
func WriteDescriptionText(out io.Writer, d *Description) error {
	return writeText(out, func(w *bytes.Buffer) { writeDescription(w, d) })
}

func writeDescription(w *bytes.Buffer, d *Description) {
	size := fmt.Sprintf("numNodes %d", d.NumNodes)
	if d.NumNodes == 0 {
		size = "numNodes 0 (follows its workload)"
	}
	if d.SliceSize > 0 {
		size += fmt.Sprintf(", sliceSize %d", d.SliceSize)
	}
	writeTable(w, "", nil, [][]string{
		{"Name:", d.Name},
		{"Namespace:", d.Namespace},
		{"Size:", size},
		{"Status:", fmt.Sprintf("%s, %d of %d nodes ready", orNone(d.Status), d.ReadyNodes, d.TotalNodes)},
		{"Blocker:", d.Blocker},
	})

	fmt.Fprintln(w, "\nCliques:")
	if len(d.Cliques) == 0 {
		fmt.Fprintln(w, "  none yet")
	}
	for _, c := range d.Cliques {
		if c.ID == "" {
			fmt.Fprintln(w, "  not placed yet:")
		} else {
			fmt.Fprintf(w, "  %s: channel %s, %d of %d nodes ready\n", c.ID, channelString(c.Channel), c.ReadyNodes, c.TotalNodes)
		}
		for _, s := range c.Slices {
			line := fmt.Sprintf("    slice %d: ranks %d-%d, %d of %d pods bound, channel %s", s.Index, s.FirstRank, s.FirstRank+s.Size-1, s.BoundPods, s.Size, channelString(s.Channel))
			if s.PodGroup != "" {
				line += ", pod group " + s.PodGroup
			}
			fmt.Fprintln(w, line)
		}
		if len(c.Nodes) > 0 {
			rows := make([][]string, len(c.Nodes))
			for i, n := range c.Nodes {
				rows[i] = []string{n.Name, fmt.Sprint(n.Index), orNone(n.Status), orNone(n.IPAddress), n.IMEXMessage}
			}
			writeTable(w, "    ", []string{"NODE", "INDEX", "IMEX", "ADDRESS", "WHY NOT READY"}, rows)
		}
	}

	pods := make([][]string, len(d.Pods))
	for i, p := range d.Pods {
		pods[i] = []string{p.Name, orNone(p.Node), orNone(p.Clique), orNone(p.Phase)}
	}
	conditions := make([][]string, len(d.Conditions))
	for i, c := range d.Conditions {
		conditions[i] = []string{c.Type, c.Status, c.Reason, oneLine(c.Message)}
	}
	events := make([][]string, len(d.Events))
	for i, e := range d.Events {
		events[i] = []string{e.LastSeen.Format(time.RFC3339), e.Type, e.Reason, fmt.Sprint(e.Count), oneLine(e.Message)}
	}
	for _, section := range []struct {
		title  string
		header []string
		rows   [][]string
	}{
		{"Pods", []string{"NAME", "NODE", "CLIQUE", "PHASE"}, pods},
		{"Conditions", []string{"TYPE", "STATUS", "REASON", "MESSAGE"}, conditions},
		{"Events", []string{"LAST SEEN", "TYPE", "REASON", "COUNT", "MESSAGE"}, events},
	} {
		fmt.Fprintf(w, "\n%s:\n", section.title)
		if len(section.rows) == 0 {
			fmt.Fprintln(w, "  none")
			continue
		}
		writeTable(w, "  ", section.header, section.rows)
	}
}

func channelString(c *int32) string {
	if c == nil {
		return "none yet"
	}
	return fmt.Sprint(*c)
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// oneLine keeps a message on its table row.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
