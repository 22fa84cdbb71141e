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

package charts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/computedomain-operator/computedomain-operator/internal/testing/envtest"
)

// chartDir is the chart, relative to this package.
const chartDir = "computedomain-operator"

// kubeVersion is the Kubernetes version the chart is rendered for (helm's default is older than the chart allows).
const kubeVersion = "1.37.2"

// helmBinary is the helm that `make` installs (HELM overrides it).
func helmBinary(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	h, err := filepath.Abs(filepath.Join("..", "bin", "helm"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(h); err != nil {
		t.Fatalf("no helm at %s: run `make test-unit` (it installs bin/helm) or set HELM", h)
	}
	return h
}

// renderChart runs `helm template` with the arguments and returns the rendered objects.
func renderChart(t *testing.T, namespace string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	cmd := exec.Command(helmBinary(t), append([]string{"template", "cdo", chartDir, "--kube-version", kubeVersion, "--namespace", namespace}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template %v: %v\n%s", args, err, stderr.String())
	}
	objs, err := decodeManifests(stdout.Bytes())
	if err != nil {
		t.Fatalf("helm template %v: %v", args, err)
	}
	return objs
}

// decodeManifests splits a multi-document YAML stream into objects, skipping empty documents.
func decodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("decode manifest %d: %w", len(objs)+1, err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

// byKind returns the rendered objects of kind.
func byKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// named keeps the objects named name.
func named(objs []*unstructured.Unstructured, name string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetName() == name {
			out = append(out, o)
		}
	}
	return out
}

// impersonating is a client of cfg acting as user, with the rights of system:masters, so that only admission
// policies can refuse it.
func impersonating(t *testing.T, cfg *rest.Config, user string) kubernetes.Interface {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters"}}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// installPolicies starts a real kube-apiserver (stopped at the end of the test), creates the namespaces, and
// installs the chart's templates rendered with the default values; the templates must render a
// ValidatingAdmissionPolicy. The returned context ends with the test's time budget.
func installPolicies(t *testing.T, namespaces []string, templates ...string) (*envtest.Env, context.Context) {
	t.Helper()
	return installPoliciesWith(t, namespaces, nil, templates...)
}

// installPoliciesWith is installPolicies with helm template arguments (values) of its own.
func installPoliciesWith(t *testing.T, namespaces, helmArgs []string, templates ...string) (*envtest.Env, context.Context) {
	t.Helper()
	env, err := envtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	for _, ns := range namespaces {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	args := append([]string(nil), helmArgs...)
	for _, tmpl := range templates {
		args = append(args, "--show-only", tmpl)
	}
	objs := renderChart(t, policyNamespace, args...)
	if len(byKind(objs, "ValidatingAdmissionPolicy")) == 0 {
		t.Fatalf("the chart renders no ValidatingAdmissionPolicy from %v with values %v", templates, helmArgs)
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	return env, ctx
}
