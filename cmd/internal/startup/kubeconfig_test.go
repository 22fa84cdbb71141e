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

package startup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const kubeconfigYAML = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://api.example:6443"}
users:
- name: u
  user: {token: t}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`

func TestRestConfigReadsTheKubeconfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(kubeconfigYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := RestConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://api.example:6443" || cfg.BearerToken != "t" {
		t.Errorf("config host %q token %q, want the file's", cfg.Host, cfg.BearerToken)
	}
}

func TestRestConfigErrorsNameTheFlag(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	cases := map[string]struct {
		kubeconfig string
		wantErr    string
	}{
		"no path outside a cluster": {kubeconfig: "", wantErr: "--kubeconfig is empty and the in-cluster config is unavailable"},
		"a path that is not there":  {kubeconfig: filepath.Join(t.TempDir(), "missing"), wantErr: "--kubeconfig " + os.TempDir()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := RestConfig(tc.kubeconfig); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}
