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

package simcluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWriteKueueConfig(t *testing.T) {
	tests := map[string]struct {
		file      string
		gates     map[string]bool
		wantGates map[string]any
		wantErr   string
	}{
		"the file's gates and resources are kept, ours go over them and the visibility server stays off": {
			file: `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
featureGates: {DynamicResourceAllocation: true, TopologyAwareScheduling: true}
resources:
  deviceClassMappings: [{name: nvidia.com/gpu, deviceClassNames: [gpu.nvidia.com]}]
`,
			gates:     map[string]bool{"DynamicResourceAllocation": false},
			wantGates: map[string]any{"DynamicResourceAllocation": false, "TopologyAwareScheduling": true, "VisibilityOnDemand": false},
		},
		"a document of another kind is refused, naming the kind wanted": {
			file:    "apiVersion: v1\nkind: ConfigMap\n",
			wantErr: "want one document of kind Configuration",
		},
		"featureGates that are not a map are refused, naming the field": {
			file:    "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nfeatureGates: [DynamicResourceAllocation]\n",
			wantErr: "featureGates must map gate names to true or false",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "in.yaml")
			if err := os.WriteFile(in, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out.json")
			err := writeKueueConfig(KueueConfig{ConfigFile: in, FeatureGates: tc.gates}, out, 9443, 8081, "/certs")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("writeKueueConfig() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("writeKueueConfig() error = %v", err)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantGates, got["featureGates"]); diff != "" {
				t.Errorf("featureGates (-want +got):\n%s", diff)
			}
			if _, ok := got["resources"].(map[string]any)["deviceClassMappings"]; !ok {
				t.Errorf("resources.deviceClassMappings dropped: %v", got["resources"])
			}
			wantRuntime := map[string]any{
				"webhook":                map[string]any{"host": "127.0.0.1", "port": float64(9443), "certDir": "/certs"},
				"health":                 map[string]any{"healthProbeBindAddress": "127.0.0.1:8081"},
				"internalCertManagement": map[string]any{"enable": false},
				"leaderElection":         map[string]any{"leaderElect": false},
			}
			for k, want := range wantRuntime {
				if diff := cmp.Diff(want, got[k]); diff != "" {
					t.Errorf("%s (-want +got):\n%s", k, diff)
				}
			}
		})
	}
}

func TestKueueWebhookPaths(t *testing.T) {
	tests := map[string]bool{
		"/mutate-batch-v1-job":                    true,
		"/validate-batch-v1-job":                  true,
		"/mutate-kueue-x-k8s-io-v1beta2-workload": true,
		"/validate-kueue-x-k8s-io-v1beta2-cohort": true,
		"/mutate--v1-pod":                         false,
		"/mutate-jobset-x-k8s-io-v1alpha2-jobset": false,
		"/validate-kubeflow-org-v2beta1-mpijob":   false,
		"/mutate-apps-v1-deployment":              false,
	}
	for path, want := range tests {
		if got := isKueueWebhookPath(path); got != want {
			t.Errorf("isKueueWebhookPath(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestCheckKueueBinaryNamesTheModuleAndTheFix(t *testing.T) {
	// This test binary is not Kueue's command.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	err = checkKueueBinary(self)
	if err == nil || !strings.Contains(err.Error(), "want sigs.k8s.io/kueue "+KueueVersion) || !strings.Contains(err.Error(), "make kueue") {
		t.Errorf("checkKueueBinary(test binary) error = %v, want one naming %s %s and make kueue", err, KueueModule, KueueVersion)
	}
	err = checkKueueBinary(filepath.Join(t.TempDir(), "kueue"))
	if err == nil || !strings.Contains(err.Error(), "make kueue") {
		t.Errorf("checkKueueBinary(missing) error = %v, want one naming make kueue", err)
	}
}
