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

package computedomain

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEventNoteFitsTheAPIServersLimit(t *testing.T) {
	short := "ComputeDomain is Ready: 4 nodes ready"
	if got := eventNote(short); got != short {
		t.Errorf("a short note changed: %q", got)
	}
	// 256 nodes in 16 cliques: the Ready condition's message runs past 1024 bytes.
	long := "ComputeDomain is Ready: 256 nodes ready; one IMEX ensemble per clique: " + strings.Repeat("02560cb9-e2f3-522e-805e-e827b722ce64.32766: channel 1, 16 nodes; ", 16)
	for _, note := range []string{long, strings.Repeat("é", 700)} {
		got := eventNote(note)
		if len(got) > maxEventNote {
			t.Errorf("note of %d bytes cut to %d, want at most %d", len(note), len(got), maxEventNote)
		}
		if !utf8.ValidString(got) {
			t.Errorf("cut inside a character: %q", got[len(got)-60:])
		}
		if !strings.HasSuffix(got, "(see the ComputeDomain's status)") {
			t.Errorf("a cut note does not say where the rest is: %q", got[len(got)-60:])
		}
	}
}
