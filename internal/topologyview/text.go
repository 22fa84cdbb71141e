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
	"io"
	"strings"
	"text/tabwriter"
)

// writeText builds a text view into a buffer (whose writes cannot fail), then writes it to out without the
// spaces tabwriter leaves at the end of a row whose last cells are empty.
func writeText(out io.Writer, build func(*bytes.Buffer)) error {
	var b bytes.Buffer
	build(&b)
	_, err := out.Write(trimLines(b.Bytes()))
	return err
}

// trimLines removes the spaces at the end of every line.
func trimLines(b []byte) []byte {
	lines := bytes.Split(b, []byte("\n"))
	for i, l := range lines {
		lines[i] = bytes.TrimRight(l, " ")
	}
	return bytes.Join(lines, []byte("\n"))
}

// writeTable prints a header (none when nil) and rows as aligned columns, each line indented.
func writeTable(b *bytes.Buffer, indent string, header []string, rows [][]string) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	if header != nil {
		rows = append([][]string{header}, rows...)
	}
	for _, row := range rows {
		// A tabwriter over a bytes.Buffer cannot fail.
		_, _ = io.WriteString(tw, indent+strings.Join(row, "\t")+"\n")
	}
	_ = tw.Flush()
}
