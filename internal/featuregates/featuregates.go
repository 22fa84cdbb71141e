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

// Package featuregates parses a binary's --feature-gates flag
// ("A=true,B=false") against the gates it knows, named after NVIDIA's DRA
// driver's where it has one. Unlike k8s.io/component-base/featuregate there is
// no process-wide registry: each binary (and each in-process copy of it in
// the simulated cluster) holds its own Set.
package featuregates

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Gate is a feature a binary can turn on or off.
type Gate struct {
	Name    string
	Default bool
	// Doc says what the gate turns on.
	Doc string
}

// Set is the value of every known gate.
type Set struct {
	known  []Gate
	values map[string]bool
}

// Defaults is the Set with every gate at its default.
func Defaults(known []Gate) Set {
	s := Set{known: known, values: map[string]bool{}}
	for _, g := range known {
		s.values[g.Name] = g.Default
	}
	return s
}

// Parse reads "A=true,B=false" over the defaults; errors name the gate and
// the allowed names or values.
func Parse(known []Gate, value string) (Set, error) {
	s := Defaults(known)
	for item := range strings.SplitSeq(value, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, raw, ok := strings.Cut(item, "=")
		if !ok {
			return Set{}, fmt.Errorf("--feature-gates %q: want <gate>=true|false", item)
		}
		name = strings.TrimSpace(name)
		if _, known := s.values[name]; !known {
			return Set{}, fmt.Errorf("--feature-gates: unknown gate %q (allowed: %s)", name, strings.Join(s.Names(), ", "))
		}
		on, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			return Set{}, fmt.Errorf("--feature-gates %s=%q: want true or false", name, raw)
		}
		s.values[name] = on
	}
	return s, nil
}

// IsZero reports whether the Set is the zero value (no gates known).
func (s Set) IsZero() bool { return s.known == nil }

// Enabled reports a gate's value; a gate the Set does not know is a bug of
// the caller and panics.
func (s Set) Enabled(name string) bool {
	on, ok := s.values[name]
	if !ok {
		panic(fmt.Sprintf("feature gate %q is not known to this binary", name))
	}
	return on
}

// Names are the known gates, sorted.
func (s Set) Names() []string {
	names := make([]string, 0, len(s.known))
	for _, g := range s.known {
		names = append(names, g.Name)
	}
	slices.Sort(names)
	return names
}

// String is the flag form of every gate, sorted.
func (s Set) String() string {
	parts := make([]string, 0, len(s.values))
	for _, name := range s.Names() {
		parts = append(parts, fmt.Sprintf("%s=%t", name, s.values[name]))
	}
	return strings.Join(parts, ",")
}

// Help is the flag's usage text: every gate with its default and doc.
func Help(known []Gate) string {
	sorted := slices.Clone(known)
	slices.SortFunc(sorted, func(a, b Gate) int { return strings.Compare(a.Name, b.Name) })
	var b strings.Builder
	b.WriteString("Comma-separated <gate>=true|false:")
	for _, g := range sorted {
		fmt.Fprintf(&b, "\n  %s (default %t): %s", g.Name, g.Default, g.Doc)
	}
	return b.String()
}
