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
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2/ktesting"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/computedomain/identity"
	"github.com/computedomain-operator/computedomain-operator/internal/imex/standin"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func daemonEnv(ip string) map[string]string {
	env := map[string]string{"NODE_NAME": "gb200-0", "POD_NAME": "cd-x-abc", "POD_NAMESPACE": "nvidia-dra", "POD_UID": "pod-uid-1", "POD_IP": ip}
	for _, kv := range (identity.Identity{DomainUID: "uid-1", DomainName: "train", DomainNamespace: "team-a", CliqueID: "c.1"}).Env() {
		k, v, _ := strings.Cut(kv, "=")
		if v != "" {
			env[k] = v
		}
	}
	return env
}

func TestParse(t *testing.T) {
	cases := map[string]struct {
		args    []string
		env     map[string]string
		wantErr string
	}{
		"the downward API is enough": {
			env: daemonEnv("10.0.0.1"),
		},
		"a flag of the retired per-domain IMEX mode": {
			args: []string{"--imex-mode=Domain"}, env: daemonEnv("10.0.0.1"),
			wantErr: "unknown flag: --imex-mode",
		},
		"no pod UID": {
			args: []string{"--pod-uid="}, env: daemonEnv("10.0.0.1"),
			wantErr: "--pod-uid: required",
		},
		"a host name is no IP address": {
			env:     daemonEnv("node-1"),
			wantErr: `--ip-address "node-1": must be an IPv4 or IPv6 address`,
		},
		"a relative config directory": {
			args: []string{"--config-dir=imex"}, env: daemonEnv("10.0.0.1"),
			wantErr: `--config-dir "imex": must be an absolute path`,
		},
		"a stray argument": {
			args: []string{"extra"}, env: daemonEnv("10.0.0.1"),
			wantErr: "unexpected arguments",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, err := parse(tc.args, envOf(tc.env))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if o.identity.ConfigDir != identity.ContainerConfigDir || o.identity.DomainName != "" {
					t.Errorf("identity = %+v", o.identity)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// One daemon with the in-process stand-in IMEX against a fake API: it reads its node's clique, writes its
// IMEXNode, owned by its pod, and reports ready.
func TestRunWritesItsIMEXNodeAndReportsReady(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1beta1.AddToScheme(scheme)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gb200-0", Labels: map[string]string{v1beta1.CliqueNodeLabelKey: "c.1"}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(node).WithStatusSubresource(&v1beta1.IMEXNode{}).Build()

	ip := fmt.Sprintf("127.%d.%d.1", 10+rand.IntN(240), 1+rand.IntN(250))
	args := []string{"--config-dir=" + t.TempDir()}
	w := wiring{
		client: func(context.Context, *options) (client.WithWatch, error) { return c, nil },
		imex:   standin.InProcess,
	}
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, envOf(daemonEnv(ip)), w) }()

	key := client.ObjectKey{Namespace: "nvidia-dra", Name: "gb200-0"}
	deadline := time.Now().Add(15 * time.Second)
	var m v1beta1.IMEXNode
	for {
		err := c.Get(ctx, key, &m)
		if err == nil && m.Status.Ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("IMEXNode not ready: %v %+v", err, m)
		}
		time.Sleep(25 * time.Millisecond)
	}
	want := v1beta1.IMEXNodeSpec{NodeName: "gb200-0", IPAddress: ip, CliqueID: "c.1"}
	if m.Spec != want {
		t.Errorf("IMEXNode spec = %+v, want %+v", m.Spec, want)
	}
	if len(m.OwnerReferences) != 1 || m.OwnerReferences[0].UID != "pod-uid-1" {
		t.Errorf("owner references = %+v, want the pod", m.OwnerReferences)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
}
