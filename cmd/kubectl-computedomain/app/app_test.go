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

package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

// kubeconfigWithNamespace writes a kubeconfig whose context's namespace is ns.
func kubeconfigWithNamespace(t *testing.T, ns string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: ctx, context: {cluster: c, user: u, namespace: ` + ns + `}}]
current-context: ctx
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeCluster is two one-tray racks: team-a/train holds the first, the second is free.
func fakeCluster(t *testing.T) NewReader {
	t.Helper()
	scheme, err := kubescheme.New()
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		utiltesting.MakeNode("tray-1").Clique("uuid.1").Obj(),
		utiltesting.MakeNode("tray-2").Clique("uuid.2").Obj(),
		utiltesting.MakeIMEXNode("tray-1", "nvidia-dra").Clique("uuid.1").Ready().Obj(),
		utiltesting.MakeIMEXNode("tray-2", "nvidia-dra").Clique("uuid.2").Ready().Obj(),
		utiltesting.MakeComputeDomain("train", "team-a").NumNodes(1).
			Node(utiltesting.MakeComputeDomainNode("tray-1", "10.0.0.1", "uuid.1", 0, v1beta1.ComputeDomainStatusReady)).Obj(),
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	return func(clientcmd.ClientConfig) (client.Reader, error) { return c, nil }
}

func TestCommands(t *testing.T) {
	kubeconfig := kubeconfigWithNamespace(t, "team-a")
	cases := map[string]struct {
		args []string
		// want are lines the output holds; wantErr the error, exactly.
		want    []string
		notWant string
		wantErr string
	}{
		"racks draws every clique": {
			args: []string{"racks"},
			want: []string{"uuid.1  0/1   A", "uuid.2  1/1   .", "1 of 2 trays free in 2 cliques"},
		},
		"racks -n shows only the cliques the namespace holds trays in": {
			args:    []string{"racks", "-n", "team-a"},
			want:    []string{"uuid.1  0/1   A", "0 of 1 trays free in 1 clique"},
			notWant: "uuid.2",
		},
		"racks --domain takes the kubeconfig's namespace": {
			args:    []string{"racks", "--domain", "train", "-o", "yaml"},
			want:    []string{"  id: uuid.1", "  namespace: team-a"},
			notWant: "uuid.2",
		},
		"describe takes the kubeconfig's namespace": {
			args: []string{"describe", "train"},
			want: []string{"Name:       train", "Namespace:  team-a", "    tray-1  0      Ready  10.0.0.1"},
		},
		"describe -n another namespace does not find it": {
			args:    []string{"describe", "train", "-n", "team-b"},
			wantErr: "DOMAIN train: no ComputeDomain train in namespace team-b (choose the namespace with -n)",
		},
		"racks --domain of a domain that does not exist": {
			args:    []string{"racks", "--domain", "infer"},
			wantErr: "--domain infer: no ComputeDomain infer in namespace team-a",
		},
		"an unknown -o for racks": {
			args:    []string{"racks", "-o", "png"},
			wantErr: `-o "png": unknown output format; allowed: text, json, yaml, svg`,
		},
		"describe has no svg": {
			args:    []string{"describe", "train", "-o", "svg"},
			wantErr: `-o "svg": unknown output format; allowed: text, json, yaml`,
		},
		"describe without a domain": {
			args:    []string{"describe"},
			wantErr: "describe takes one argument, DOMAIN (a ComputeDomain's name; its namespace with -n), got 0",
		},
		"--watch prints text only": {
			args:    []string{"racks", "--watch", "-o", "json"},
			wantErr: "--watch redraws the text view; drop -o json",
		},
		"racks takes no arguments": {
			args:    []string{"racks", "train"},
			wantErr: `unknown command "train" for "kubectl computedomain racks"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			cmd := NewCommand(Streams{Out: &out, ErrOut: &errOut}, fakeCluster(t))
			cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig}, tc.args...))
			err := cmd.Execute()
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.notWant != "" && strings.Contains(out.String(), tc.notWant) {
				t.Errorf("output names %s:\n%s", tc.notWant, out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w+"\n") {
					t.Errorf("output lacks the line %q:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestWatchRedrawsOnlyWhenThePictureChanges(t *testing.T) {
	pictures := []string{"a\n", "a\n", "b\n", "b\n", "a\n"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	render := func(context.Context) ([]byte, error) {
		p := pictures[calls]
		calls++
		if calls == len(pictures) {
			cancel()
		}
		return []byte(p), nil
	}
	var out bytes.Buffer
	if err := watch(ctx, &out, time.Millisecond, render); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), clearScreen); got != 2 {
		t.Errorf("%d redraws for pictures %q, want 2 (a, then b; the last a comes after the watch ended):\n%q", got, pictures, out.String())
	}
}
