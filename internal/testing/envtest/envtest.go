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

// Package envtest starts a real kube-apiserver and etcd (controller-runtime's envtest) with this
// repository's CRDs installed, for API and controller tests. The binaries come from the directory named by
// KUBEBUILDER_ASSETS or else from <repo>/bin, where `make testbins` builds them; nothing is downloaded.
package envtest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
)

// ModulePath is the product module; RepoRoot looks for the go.mod that declares it.
const ModulePath = "github.com/computedomain-operator/computedomain-operator"

// CRDDir is the directory of the CRD manifests, relative to the repository root.
const CRDDir = "charts/computedomain-operator/crds"

// RequiredBinaries are the binaries envtest starts.
var RequiredBinaries = []string{"kube-apiserver", "etcd"}

// Env is a running control plane with a client that knows this repository's kinds.
type Env struct {
	Environment *envtest.Environment
	Config      *rest.Config
	Scheme      *runtime.Scheme
	// Client talks to the apiserver directly, without a cache: reads see every earlier write.
	Client client.Client
}

// Option changes how the control plane is started.
type Option func(*envtest.Environment)

// WorkloadGates are the Kubernetes 1.37 gates of the Workload API that WithWorkloadAPI turns on.
var WorkloadGates = []string{"GenericWorkload", "TopologyAwareWorkloadScheduling", "CompositePodGroup"}

// WithWorkloadAPI makes kube-apiserver serve the Workload API (scheduling.k8s.io/v1beta1 PodGroups, off by
// default in 1.37) with the given gates on (default WorkloadGates; GenericWorkload alone keeps PodGroups but
// drops their topology constraints); with CompositePodGroup among them it serves scheduling.k8s.io/v1alpha3 too.
func WithWorkloadAPI(gates ...string) Option {
	if len(gates) == 0 {
		gates = WorkloadGates
	}
	return func(e *envtest.Environment) {
		on := make([]string, len(gates))
		runtimeConfig := []string{"scheduling.k8s.io/v1beta1=true"}
		for i, g := range gates {
			on[i] = g + "=true"
			if g == "CompositePodGroup" {
				runtimeConfig = append(runtimeConfig, "scheduling.k8s.io/v1alpha3=true")
			}
		}
		e.ControlPlane.GetAPIServer().Configure().
			Append("runtime-config", strings.Join(runtimeConfig, ",")).
			Append("feature-gates", strings.Join(on, ","))
	}
}

// Start starts kube-apiserver and etcd, installs the CRDs and waits until they are served.
// The caller must call Stop.
func Start(opts ...Option) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets, err := BinaryAssetsDir(root)
	if err != nil {
		return nil, err
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	environment := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, CRDDir)},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	for _, opt := range opts {
		opt(environment)
	}
	cfg, err := environment.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest with binaries from %s: %w", assets, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("create client: %w", err), environment.Stop())
	}
	return &Env{Environment: environment, Config: cfg, Scheme: scheme, Client: c}, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error {
	if e == nil || e.Environment == nil {
		return nil
	}
	return e.Environment.Stop()
}

// NewScheme returns a scheme with the built-in Kubernetes kinds and this repository's kinds.
func NewScheme() (*runtime.Scheme, error) {
	return kubescheme.New()
}

// RepoRoot walks up from the working directory (a test's package directory) to the directory whose
// go.mod declares ModulePath.
func RepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if modulePath(filepath.Join(dir, "go.mod")) == ModulePath {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("find repository root: no go.mod declaring module %s above %s", ModulePath, wd)
		}
	}
}

// BinaryAssetsDir returns the directory holding kube-apiserver and etcd: KUBEBUILDER_ASSETS when set,
// else <root>/bin. It fails, saying how to build them, when one is missing.
func BinaryAssetsDir(root string) (string, error) {
	dir, source := filepath.Join(root, "bin"), "<repo>/bin"
	if env := os.Getenv("KUBEBUILDER_ASSETS"); env != "" {
		dir, source = env, "KUBEBUILDER_ASSETS"
	}
	var missing []string
	for _, name := range RequiredBinaries {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("envtest binaries %s missing from %s (%s): run `make testbins`",
			strings.Join(missing, ", "), dir, source)
	}
	return dir, nil
}

func modulePath(goMod string) string {
	f, err := os.Open(goMod)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}
