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

package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/computedomain-operator/computedomain-operator/internal/atomicfile"
)

// Store reads and writes one checkpoint file.
type Store struct {
	path   string
	bootID string
}

// NewStore returns a store for the file at path, owned by the current boot.
func NewStore(path, bootID string) *Store {
	return &Store{path: path, bootID: bootID}
}

// LoadResult tells what Load found besides the state.
type LoadResult struct {
	// Found is false when no checkpoint file existed yet.
	Found bool
	// DiscardedBootID is the boot ID of state thrown away because the node
	// rebooted since it was written; empty when nothing was discarded.
	DiscardedBootID string
	// DiscardedClaims counts the claims in that stale state.
	DiscardedClaims int
}

// Load returns the stored state. State from an earlier boot is discarded (the
// devices it describes no longer exist); a file without boot ID (converted from
// V1) is adopted by the current boot. A corrupt file is an error wrapping
// ErrCorrupt: the caller must not guess which devices are in use.
func (s *Store) Load() (Checkpoint, LoadResult, error) {
	raw, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return New(s.bootID), LoadResult{}, nil
	}
	if err != nil {
		return Checkpoint{}, LoadResult{}, fmt.Errorf("read checkpoint %s: %w", s.path, err)
	}
	cp, err := decode(raw)
	if err != nil {
		return Checkpoint{}, LoadResult{}, fmt.Errorf("checkpoint %s: %w", s.path, err)
	}
	res := LoadResult{Found: true}
	if cp.BootID != "" && cp.BootID != s.bootID {
		res.DiscardedBootID = cp.BootID
		res.DiscardedClaims = len(cp.Claims)
		return New(s.bootID), res, nil
	}
	cp.BootID = s.bootID
	return cp, res, nil
}

// Save replaces the file atomically: temp file in the same directory, fsync,
// rename. A crash of the plugin at any point leaves either the old or the new
// content, never a mix. The directory is not fsynced: only a crash of the whole
// node could lose the rename, and after one the boot ID has changed, so
// whichever complete version survived is discarded anyway; the file fsync
// before the rename is what keeps that version readable.
func (s *Store) Save(cp Checkpoint) error {
	cp.BootID = s.bootID
	data, err := encode(cp)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o750); err != nil {
		return fmt.Errorf("create checkpoint directory: %w", err)
	}
	if err := atomicfile.Write(s.path, data, 0o600); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	return nil
}

// ReadBootID reads the kernel's boot ID from path (normally
// <host root>/proc/sys/kernel/random/boot_id).
func ReadBootID(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read boot ID: %w", err)
	}
	id := strings.TrimSpace(string(raw))
	if id == "" {
		return "", fmt.Errorf("read boot ID: %s is empty", path)
	}
	return id, nil
}
