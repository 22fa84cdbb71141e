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

package envtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRepoRoot(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatalf("RepoRoot() = %v", err)
	}
	if got := modulePath(filepath.Join(root, "go.mod")); got != ModulePath {
		t.Errorf("RepoRoot() = %s, whose go.mod declares %q, want %q", root, got, ModulePath)
	}
	if _, err := os.Stat(filepath.Join(root, CRDDir)); err != nil {
		t.Errorf("the CRD directory is missing under the repository root: %v", err)
	}
}

func TestBinaryAssetsDir(t *testing.T) {
	cases := map[string]struct {
		inRepoBin []string // files under <root>/bin, mode 0755
		inEnv     []string // files under $KUBEBUILDER_ASSETS, mode 0755; nil leaves it unset
		notExec   []string // files under <root>/bin, mode 0644
		wantDir   string   // "root" or "env"
		wantErr   string
	}{
		"both binaries in <repo>/bin are found": {
			inRepoBin: []string{"kube-apiserver", "etcd"},
			wantDir:   "root",
		},
		"KUBEBUILDER_ASSETS wins over <repo>/bin": {
			inRepoBin: []string{"kube-apiserver", "etcd"},
			inEnv:     []string{"kube-apiserver", "etcd"},
			wantDir:   "env",
		},
		"a missing kube-apiserver says to run make testbins": {
			inRepoBin: []string{"etcd"},
			wantErr:   "envtest binaries kube-apiserver missing from ROOT/bin (<repo>/bin): run `make testbins`",
		},
		"a binary that is not executable counts as missing": {
			inRepoBin: []string{"kube-apiserver"},
			notExec:   []string{"etcd"},
			wantErr:   "envtest binaries etcd missing from ROOT/bin (<repo>/bin): run `make testbins`",
		},
		"an empty KUBEBUILDER_ASSETS directory is named in the error": {
			inRepoBin: []string{"kube-apiserver", "etcd"},
			inEnv:     []string{},
			wantErr:   "envtest binaries kube-apiserver, etcd missing from ENV (KUBEBUILDER_ASSETS): run `make testbins`",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root, env := t.TempDir(), t.TempDir()
			write := func(dir string, names []string, mode os.FileMode) {
				for _, n := range names {
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), mode); err != nil {
						t.Fatal(err)
					}
				}
			}
			write(filepath.Join(root, "bin"), tc.inRepoBin, 0o755)
			write(filepath.Join(root, "bin"), tc.notExec, 0o644)
			t.Setenv("KUBEBUILDER_ASSETS", "")
			if tc.inEnv != nil {
				write(env, tc.inEnv, 0o755)
				t.Setenv("KUBEBUILDER_ASSETS", env)
			}

			got, err := BinaryAssetsDir(root)
			wantErr := tc.wantErr
			if wantErr != "" {
				wantErr = replaceAll(wantErr, map[string]string{"ROOT": root, "ENV": env})
			}
			if diff := cmp.Diff(wantErr, errText(err)); diff != "" {
				t.Errorf("BinaryAssetsDir() error (-want +got):\n%s", diff)
			}
			want := map[string]string{"root": filepath.Join(root, "bin"), "env": env, "": ""}[tc.wantDir]
			if got != want {
				t.Errorf("BinaryAssetsDir() = %q, want %q", got, want)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func replaceAll(s string, repl map[string]string) string {
	for old, replacement := range repl {
		s = strings.ReplaceAll(s, old, replacement)
	}
	return s
}
