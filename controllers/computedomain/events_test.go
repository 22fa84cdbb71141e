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
