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
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/computedomain-operator/computedomain-operator/internal/atomicfile"
)

// FormatVersion is the ledger file's format, in its first line.
const FormatVersion = "v1"

// header is the ledger file's first line.
type header struct {
	// Ledger is a random ID made when the file is created: a reader that
	// finds another ID at the same node starts that node over from seq 0.
	Ledger  string `json:"ledger"`
	Version string `json:"version"`
	// Node is the node whose plugin created the file. A plugin that finds
	// another node's ledger (a cloned disk) quarantines it and starts its
	// own; the metering component refuses a ledger served by another node.
	Node string `json:"node,omitempty"`
	// NextSeq is the next sequence number as of the last compaction, so
	// numbers carry on when compaction dropped every record.
	NextSeq uint64 `json:"nextSeq,omitempty"`
}

// Options are what Open needs besides the path.
type Options struct {
	// Node is the plugin's node, written into a new ledger's header; a
	// ledger of another node is quarantined. Empty: not checked.
	Node string
	// Clock names quarantined files; nil: the real clock.
	Clock clock.PassiveClock
}

// Ledger is one node plugin's usage ledger file, safe for concurrent use.
type Ledger struct {
	mu          sync.Mutex
	path        string
	id          string
	node        string
	f           *os.File
	size        int64
	records     []Record
	next        uint64
	open        map[IntervalKey]Record
	closed      map[IntervalKey]bool
	quarantined []Quarantine
}

// Open opens the ledger at path, creating it (and its ID) when missing. A
// last line torn by a crash during an append is cut off: its record was never
// acknowledged. A ledger that cannot be read whole is never an error that
// stops the node: the file is moved aside (Quarantined says where and why)
// and a new one written with every record that could be read (see
// quarantine.go). Only a file system that cannot be read or written is an
// error.
func Open(path string, opts Options) (*Ledger, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	l := &Ledger{path: path, node: opts.Node, next: 1, open: map[IntervalKey]Record{}, closed: map[IntervalKey]bool{}}
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := l.create(); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("read usage ledger: %w", err)
	default:
		if err := l.load(raw, opts.Clock.Now()); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("open usage ledger: %w", err)
	}
	l.f = f
	return l, nil
}

func newID() (string, error) {
	id := make([]byte, 8)
	if _, err := rand.Read(id); err != nil {
		return "", fmt.Errorf("usage ledger ID: %w", err)
	}
	return hex.EncodeToString(id), nil
}

func (l *Ledger) create() error {
	id, err := newID()
	if err != nil {
		return err
	}
	l.id = id
	line, err := json.Marshal(header{Ledger: l.id, Version: FormatVersion, Node: l.node})
	if err != nil {
		return fmt.Errorf("encode usage ledger header: %w", err)
	}
	if err := atomicfile.Write(l.path, append(line, '\n'), 0o600); err != nil {
		return fmt.Errorf("create usage ledger: %w", err)
	}
	l.size = int64(len(line) + 1)
	// A new file must survive a crash of the node, or its records would.
	return syncDir(filepath.Dir(l.path))
}

func (l *Ledger) load(raw []byte, now time.Time) error {
	good := 0 // bytes of complete lines
	lineNo := 0
	var headerNext, maxSeq uint64
	var damage damage
	r := bufio.NewReader(bytes.NewReader(raw))
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			// A rest without a newline is an append a crash interrupted:
			// it was never acknowledged, and is cut off below.
			break
		}
		lineNo++
		good += len(line)
		if lineNo == 1 {
			h, err := readHeader(line)
			if err != nil {
				damage.add(1, err)
				continue
			}
			if l.node != "" && h.Node != "" && h.Node != l.node {
				// Another node's ledger (a cloned disk): none of it is
				// this node's.
				damage.foreign = h.Node
				break
			}
			l.id = h.Ledger
			headerNext = h.NextSeq
			continue
		}
		var rec Record
		if err := json.Unmarshal(line, &rec); err != nil {
			damage.add(lineNo, err)
			continue
		}
		if err := rec.validate(); err != nil {
			damage.add(lineNo, err)
			continue
		}
		maxSeq = max(maxSeq, rec.Seq)
		if rec.Seq < l.next {
			damage.add(lineNo, fmt.Errorf("seq %d after seq %d", rec.Seq, l.next-1))
			continue
		}
		l.apply(rec)
	}
	if lineNo == 0 {
		damage.add(1, errors.New("no header line"))
	}
	// Numbers carry on after every number the file held, readable or not.
	l.next = max(l.next, headerNext, maxSeq+1)
	if damage.any() {
		return l.quarantine(raw, damage, now)
	}
	if good < len(raw) {
		if err := os.Truncate(l.path, int64(good)); err != nil {
			return fmt.Errorf("cut the torn last line of usage ledger %s: %w", l.path, err)
		}
	}
	l.size = int64(good)
	return nil
}

func readHeader(line []byte) (header, error) {
	var h header
	if err := json.Unmarshal(line, &h); err != nil {
		return h, fmt.Errorf("not a ledger header: %w", err)
	}
	if h.Ledger == "" {
		return h, fmt.Errorf("the header has no ledger ID (want {\"ledger\":<id>,\"version\":%q})", FormatVersion)
	}
	if h.Version != FormatVersion {
		return h, fmt.Errorf("version %q, allowed: %s", h.Version, FormatVersion)
	}
	return h, nil
}

func (l *Ledger) apply(rec Record) {
	l.records = append(l.records, rec)
	l.next = rec.Seq + 1
	k := rec.key()
	switch rec.Kind {
	case KindStart:
		l.open[k] = rec
	case KindEnd:
		delete(l.open, k)
		l.closed[k] = true
	}
}

// Close closes the file.
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// ID is the ledger's random ID.
func (l *Ledger) ID() string { return l.id }

// Node is the node the ledger belongs to (empty: not said).
func (l *Ledger) Node() string { return l.node }

// Append numbers the records, writes them in one write and fsyncs. On error
// the file is cut back to where it was and nothing is recorded. It refuses a
// start of an interval that exists and an end of one that is not open.
func (l *Ledger) Append(recs ...Record) ([]Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var buf bytes.Buffer
	out := make([]Record, 0, len(recs))
	// What the batch itself opens and closes, on top of the file.
	opened, ended := map[IntervalKey]bool{}, map[IntervalKey]bool{}
	for i, rec := range recs {
		rec.Seq = l.next + uint64(i)
		rec.Time, rec.Start = rec.Time.UTC(), rec.Start.UTC()
		if err := rec.validate(); err != nil {
			return nil, err
		}
		k := rec.key()
		_, inFile := l.open[k]
		isOpen := (inFile || opened[k]) && !ended[k]
		switch {
		case rec.Kind == KindStart && (inFile || l.closed[k] || opened[k]):
			return nil, fmt.Errorf("record %d: interval of claim %s from %s is already recorded", rec.Seq, k.ClaimUID, k.Start.Format(time.RFC3339Nano))
		case rec.Kind == KindEnd && !isOpen:
			return nil, fmt.Errorf("record %d: interval of claim %s from %s is not open", rec.Seq, k.ClaimUID, k.Start.Format(time.RFC3339Nano))
		}
		if rec.Kind == KindStart {
			opened[k] = true
		} else {
			ended[k] = true
		}
		line, err := json.Marshal(rec)
		if err != nil {
			return nil, fmt.Errorf("encode usage record: %w", err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
		out = append(out, rec)
	}
	if len(out) == 0 {
		return nil, nil
	}
	if _, err := l.f.Write(buf.Bytes()); err != nil {
		_ = l.f.Truncate(l.size)
		return nil, fmt.Errorf("append to usage ledger %s: %w", l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		_ = l.f.Truncate(l.size)
		return nil, fmt.Errorf("fsync usage ledger %s: %w", l.path, err)
	}
	l.size += int64(buf.Len())
	for _, rec := range out {
		l.apply(rec)
	}
	return out, nil
}

// OpenIntervals are the start records of the intervals not yet closed.
func (l *Ledger) OpenIntervals() map[IntervalKey]Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[IntervalKey]Record, len(l.open))
	for k, r := range l.open {
		out[k] = r
	}
	return out
}

// Recorded says whether the ledger holds the interval (open or closed).
func (l *Ledger) Recorded(k IntervalKey) (open, closed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k.Start = k.Start.UTC()
	_, open = l.open[k]
	return open, l.closed[k]
}

// After returns up to limit records with a sequence number above seq, in
// order, and whether more follow. limit <= 0 means no limit.
func (l *Ledger) After(seq uint64, limit int) ([]Record, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, _ := slices.BinarySearchFunc(l.records, seq+1, func(r Record, s uint64) int {
		switch {
		case r.Seq < s:
			return -1
		case r.Seq > s:
			return 1
		}
		return 0
	})
	rest := l.records[i:]
	if limit > 0 && len(rest) > limit {
		return slices.Clone(rest[:limit]), true
	}
	return slices.Clone(rest), false
}

// NextSeq is the sequence number the next record gets.
func (l *Ledger) NextSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next
}

// Compact drops the closed intervals that ended before cutoff (both their
// records) and rewrites the file atomically. Open intervals and everything
// newer stay; sequence numbers carry on. It returns how many intervals it
// dropped; with none to drop it writes nothing.
func (l *Ledger) Compact(cutoff time.Time) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	drop := map[IntervalKey]bool{}
	for _, r := range l.records {
		if r.Kind == KindEnd && r.Time.Before(cutoff) {
			drop[r.key()] = true
		}
	}
	if len(drop) == 0 {
		return 0, nil
	}
	var buf bytes.Buffer
	line, err := json.Marshal(header{Ledger: l.id, Version: FormatVersion, Node: l.node, NextSeq: l.next})
	if err != nil {
		return 0, fmt.Errorf("encode usage ledger header: %w", err)
	}
	buf.Write(line)
	buf.WriteByte('\n')
	var kept []Record
	for _, r := range l.records {
		if drop[r.key()] {
			continue
		}
		line, err := json.Marshal(r)
		if err != nil {
			return 0, fmt.Errorf("encode usage record: %w", err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
		kept = append(kept, r)
	}
	if err := atomicfile.Write(l.path, buf.Bytes(), 0o600); err != nil {
		return 0, fmt.Errorf("compact usage ledger: %w", err)
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return 0, fmt.Errorf("reopen usage ledger: %w", err)
	}
	_ = l.f.Close()
	l.f, l.size, l.records = f, int64(buf.Len()), kept
	for k := range drop {
		delete(l.closed, k)
	}
	return len(drop), nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer func() { _ = d.Close() }()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}
