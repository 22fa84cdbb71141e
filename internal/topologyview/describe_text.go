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
	"text/tabwriter"
	"time"
)

// WriteDescriptionText prints a domain's description: summary, what blocks it, cliques with their channels,
// slices and nodes, pods, conditions and recent events.
func WriteDescriptionText(out io.Writer, d *Description) error {
	var w bytes.Buffer
	if err := writeDescriptionText(&w, d); err != nil {
		return err
	}
	_, err := out.Write(trimLines(w.Bytes()))
	return err
}

// trimLines removes the spaces tabwriter leaves at the end of a row whose last cells are empty.
func trimLines(b []byte) []byte {
	lines := bytes.Split(b, []byte("\n"))
	for i, l := range lines {
		lines[i] = bytes.TrimRight(l, " ")
	}
	return bytes.Join(lines, []byte("\n"))
}

func writeDescriptionText(w io.Writer, d *Description) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Name:\t%s\n", d.Name)
	fmt.Fprintf(tw, "Namespace:\t%s\n", d.Namespace)
	size := fmt.Sprintf("numNodes %d", d.NumNodes)
	if d.NumNodes == 0 {
		size = "numNodes 0 (follows its workload)"
	}
	if d.SliceSize > 0 {
		size += fmt.Sprintf(", sliceSize %d", d.SliceSize)
	}
	fmt.Fprintf(tw, "Size:\t%s\n", size)
	fmt.Fprintf(tw, "Status:\t%s, %d of %d nodes ready\n", orNone(d.Status), d.ReadyNodes, d.TotalNodes)
	fmt.Fprintf(tw, "Blocker:\t%s\n", d.Blocker)
	if err := tw.Flush(); err != nil {
		return err
	}

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
			tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "    NODE\tINDEX\tIMEX\tADDRESS\tWHY NOT READY")
			for _, n := range c.Nodes {
				fmt.Fprintf(tw, "    %s\t%d\t%s\t%s\t%s\n", n.Name, n.Index, orNone(n.Status), orNone(n.IPAddress), n.IMEXMessage)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}

	fmt.Fprintln(w, "\nPods:")
	if len(d.Pods) == 0 {
		fmt.Fprintln(w, "  none")
	} else {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tNODE\tCLIQUE\tPHASE")
		for _, p := range d.Pods {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", p.Name, orNone(p.Node), orNone(p.Clique), orNone(p.Phase))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	fmt.Fprintln(w, "\nConditions:")
	if len(d.Conditions) == 0 {
		fmt.Fprintln(w, "  none")
	} else {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tMESSAGE")
		for _, c := range d.Conditions {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, oneLine(c.Message))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	fmt.Fprintln(w, "\nEvents:")
	if len(d.Events) == 0 {
		fmt.Fprintln(w, "  none")
		return nil
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  LAST SEEN\tTYPE\tREASON\tCOUNT\tMESSAGE")
	for _, e := range d.Events {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\n", e.LastSeen.Format(time.RFC3339), e.Type, e.Reason, e.Count, oneLine(e.Message))
	}
	return tw.Flush()
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
