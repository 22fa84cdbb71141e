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

package usage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/computedomain-operator/computedomain-operator/internal/atomicfile"
)

// Quarantine is a ledger file that could not be read whole and was moved
// aside when the ledger was opened.
type Quarantine struct {
	// File is where the file as it was now lies (next to the ledger,
	// <ledger>.damaged-<time>).
	File string `json:"file"`
	// Lines are the lines that could not be read (1 is the header); none
	// when the whole file was another node's.
	Lines []int `json:"lines,omitempty"`
	// Reason says what was wrong with the first of them.
	Reason string `json:"reason"`
	// At is when it was moved aside (the node's time).
	At time.Time `json:"at"`
}

// damage is what load found unreadable.
type damage struct {
	lines []int
	first error
	// foreign is the node a cloned ledger's header names.
	foreign string
}

func (d *damage) add(line int, err error) {
	if d.first == nil {
		d.first = fmt.Errorf("line %d: %w", line, err)
	}
	d.lines = append(d.lines, line)
}

func (d damage) any() bool { return len(d.lines) > 0 || d.foreign != "" }

// quarantine moves the damaged file aside and writes the ledger anew with
// what load could read: the same ID when the header was readable (a reader
// goes on from its cursor; the unreadable records are simply missing), a new
// ID when it was not. A foreign ledger (another node's header) keeps nothing:
// the new file is this node's own, with a new ID. The node's plugin then
// writes what its checkpoint says is missing (a prepared claim's lost start)
// at its next sync.
func (l *Ledger) quarantine(raw []byte, d damage, now time.Time) error {
	q := Quarantine{File: fmt.Sprintf("%s.damaged-%s", l.path, now.UTC().Format("20060102T150405.000000000Z")), Lines: slices.Clone(d.lines), At: now.UTC()}
	if d.foreign != "" {
		q.Reason = fmt.Sprintf("the ledger was created by node %s, not %s (a cloned disk)", d.foreign, l.node)
		l.id, l.records, l.next = "", nil, 1
		l.open, l.closed = map[IntervalKey]Record{}, map[IntervalKey]bool{}
	} else {
		q.Reason = d.first.Error()
	}
	if l.id == "" {
		id, err := newID()
		if err != nil {
			return err
		}
		l.id = id
	}
	// The damaged file first: never lose what could be read by hand.
	if err := os.WriteFile(q.File, raw, 0o600); err != nil {
		return fmt.Errorf("quarantine usage ledger %s: %w", l.path, err)
	}
	var buf bytes.Buffer
	line, err := json.Marshal(header{Ledger: l.id, Version: FormatVersion, Node: l.node, NextSeq: l.next})
	if err != nil {
		return fmt.Errorf("encode usage ledger header: %w", err)
	}
	buf.Write(line)
	buf.WriteByte('\n')
	for _, r := range l.records {
		line, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode usage record: %w", err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if err := atomicfile.Write(l.path, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("rewrite quarantined usage ledger %s: %w", l.path, err)
	}
	if err := syncDir(filepath.Dir(l.path)); err != nil {
		return err
	}
	l.size = int64(buf.Len())
	l.quarantined = append(l.quarantined, q)
	return nil
}

// Quarantined are the files moved aside when the ledger was opened.
func (l *Ledger) Quarantined() []Quarantine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.quarantined)
}
