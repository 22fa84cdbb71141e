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

package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWrite(t *testing.T) {
	cases := map[string]struct {
		existing []byte
		data     []byte
		perm     fs.FileMode
	}{
		"a new file gets the data and the mode":          {data: []byte(`{"a":1}`), perm: 0o644},
		"an existing file is replaced as a whole":        {existing: []byte("old content that is longer"), data: []byte("new"), perm: 0o600},
		"an empty file is written (an empty nodes file)": {existing: []byte("10.0.0.1\n"), data: nil, perm: 0o644},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "spec.json")
			if tc.existing != nil {
				if err := os.WriteFile(path, tc.existing, 0o666); err != nil {
					t.Fatal(err)
				}
			}
			if err := Write(path, tc.data, tc.perm); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(tc.data), string(got)); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode().Perm() != tc.perm {
				t.Errorf("mode %v, want %v", info.Mode().Perm(), tc.perm)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				t.Errorf("directory holds %d entries, want only the file (no temp file left)", len(entries))
			}
		})
	}
}

func TestWriteIntoAMissingDirectoryFailsAndLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o644); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("directory holds %v, want nothing", entries)
	}
}

func TestWriteOverADirectoryFailsAndRemovesItsTempFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(target, []byte("x"), 0o644); err == nil {
		t.Fatal("replacing a non-empty directory succeeded")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "target" {
		t.Errorf("directory holds %v, want only target", entries)
	}
}
