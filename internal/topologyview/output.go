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
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Format is an output format of the views (the plugin's -o).
type Format string

const (
	FormatText Format = "text"
	FormatJSON Format = "json"
	FormatYAML Format = "yaml"
	FormatSVG  Format = "svg"
)

// RacksFormats and DescribeFormats are the formats each view can print, in the order error messages list them.
var (
	RacksFormats    = []Format{FormatText, FormatJSON, FormatYAML, FormatSVG}
	DescribeFormats = []Format{FormatText, FormatJSON, FormatYAML}
)

// ParseFormat checks the -o value against the formats a view allows; empty is text.
func ParseFormat(value string, allowed []Format) (Format, error) {
	if value == "" {
		return FormatText, nil
	}
	if f := Format(value); slices.Contains(allowed, f) {
		return f, nil
	}
	names := make([]string, len(allowed))
	for i, f := range allowed {
		names[i] = string(f)
	}
	return "", fmt.Errorf("-o %q: unknown output format; allowed: %s", value, strings.Join(names, ", "))
}

// WriteRacks prints the racks view in format f.
func WriteRacks(w io.Writer, r *Racks, f Format) error {
	switch f {
	case FormatText:
		return WriteRacksText(w, r)
	case FormatSVG:
		return WriteRacksSVG(w, r)
	}
	return writeData(w, r, f)
}

// WriteDescription prints a domain's description in format f.
func WriteDescription(w io.Writer, d *Description, f Format) error {
	if f == FormatText {
		return WriteDescriptionText(w, d)
	}
	return writeData(w, d, f)
}

// writeData prints v as JSON or YAML.
func writeData(w io.Writer, v any, f Format) error {
	var (
		out []byte
		err error
	)
	switch f {
	case FormatJSON:
		out, err = json.MarshalIndent(v, "", "  ")
		out = append(out, '\n')
	case FormatYAML:
		out, err = yaml.Marshal(v)
	default:
		return fmt.Errorf("-o %q: this view has no such output format", f)
	}
	if err != nil {
		return fmt.Errorf("encode %s: %w", f, err)
	}
	_, err = w.Write(out)
	return err
}
