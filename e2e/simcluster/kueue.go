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
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"
)

// KueueVersion is the Kueue release StartKueue runs: bin/kueue is `go install
// sigs.k8s.io/kueue/cmd/kueue@KueueVersion` (the Makefile's KUEUE_VERSION; bump
// both together). Kueue is built from its own module, never linked into ours:
// it pins other k8s.io versions.
const KueueVersion = "v0.17.0"

// KueueModule is Kueue's Go module path.
const KueueModule = "sigs.k8s.io/kueue"

// KueueNamespace is the namespace Kueue's Configuration names (its events and
// defaults live there; the simulated cluster runs Kueue outside any pod).
const KueueNamespace = "kueue-system"

// KueueConfig says how to run Kueue against a simulated cluster.
type KueueConfig struct {
	// Binary is the kueue executable (default <repo>/bin/kueue). It must be
	// built from KueueModule at KueueVersion.
	Binary string
	// ConfigFile is a Kueue Configuration (config.kueue.x-k8s.io/v1beta2) to
	// start from, such as demo/kueue/controller-config.yaml. StartKueue keeps
	// its feature gates, integrations and resources, and sets what running
	// outside a pod needs: webhook and health addresses on 127.0.0.1,
	// metrics off, no leader election, internal certificate management off.
	ConfigFile string
	// FeatureGates override the file's featureGates.
	FeatureGates map[string]bool
	// Dir holds the kubeconfig, configuration, certificates and log (default:
	// a temporary directory removed by Stop).
	Dir string
}

// Kueue is a running Kueue controller process.
type Kueue struct {
	cmd      *exec.Cmd
	dir      string
	ownsDir  bool
	logPath  string
	cluster  *Cluster
	proxy    *versionProxy
	done     chan struct{}
	waitErr  error
	stopOnce sync.Once
}

// kueueStartTimeout bounds the wait for Kueue's readiness probe.
const kueueStartTimeout = 2 * time.Minute

// StartKueue installs Kueue's CRDs into the cluster (from Kueue's module at
// KueueVersion), starts the Kueue binary as its own process with a
// kubeconfig for the cluster (through a loopback proxy that reports the
// cluster's Kubernetes release at /version: see versionProxy) and the
// configuration of cfg, and registers
// Kueue's webhooks for its own kinds and batch/v1 Jobs by URL at the
// process's 127.0.0.1 address with a CA made here. It returns once Kueue is
// ready and its webhooks are registered. Stop it before the cluster.
func StartKueue(ctx context.Context, c *Cluster, cfg KueueConfig) (_ *Kueue, err error) {
	logger := klog.FromContext(ctx)
	if cfg.Binary == "" {
		root, err := RepoRoot()
		if err != nil {
			return nil, err
		}
		cfg.Binary = filepath.Join(root, "bin", "kueue")
	}
	if err := checkKueueBinary(cfg.Binary); err != nil {
		return nil, err
	}
	moduleDir, err := KueueModuleDir(ctx)
	if err != nil {
		return nil, err
	}
	k := &Kueue{dir: cfg.Dir, cluster: c, done: make(chan struct{})}
	if k.dir == "" {
		if k.dir, err = os.MkdirTemp("", "kueue"); err != nil {
			return nil, err
		}
		k.ownsDir = true
	} else if err := os.MkdirAll(k.dir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			k.Stop()
		}
	}()

	if err := installKueueCRDs(ctx, c, moduleDir); err != nil {
		return nil, err
	}
	if _, err := c.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KueueNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create namespace %s: %w", KueueNamespace, err)
	}

	if err := ensureKueueMetricsCerts(); err != nil {
		return nil, err
	}
	certs, err := newWebhookCerts(filepath.Join(k.dir, "certs"))
	if err != nil {
		return nil, err
	}
	webhookPort, err := freePort()
	if err != nil {
		return nil, err
	}
	healthPort, err := freePort()
	if err != nil {
		return nil, err
	}
	configPath := filepath.Join(k.dir, "config.json")
	if err := writeKueueConfig(cfg, configPath, webhookPort, healthPort, certs.dir); err != nil {
		return nil, err
	}
	if k.proxy, err = startVersionProxy(c.RESTConfig()); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(k.dir, "kubeconfig")
	if err := WriteKubeconfig(k.proxy.Config(), kubeconfig); err != nil {
		return nil, err
	}

	k.logPath = filepath.Join(k.dir, "kueue.log")
	logFile, err := os.Create(k.logPath)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logFile.Close() }()
	k.cmd = exec.Command(cfg.Binary, "--config", configPath)
	k.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	k.cmd.Stdout, k.cmd.Stderr = logFile, logFile
	// Kueue dies with the test process, however that ends.
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := k.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Binary, err)
	}
	go func() {
		k.waitErr = k.cmd.Wait()
		close(k.done)
	}()
	logger.V(1).Info("Kueue started", "pid", k.cmd.Process.Pid, "log", k.logPath, "webhookPort", webhookPort)

	if err := k.waitReady(ctx, healthPort); err != nil {
		return nil, err
	}
	if err := registerKueueWebhooks(ctx, c, moduleDir, "https://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(webhookPort)), certs.caPEM); err != nil {
		return nil, err
	}
	return k, nil
}

// LogPath is the file Kueue's output goes to.
func (k *Kueue) LogPath() string { return k.logPath }

// LogTail returns the last n bytes of Kueue's log, for failure messages.
func (k *Kueue) LogTail(n int) string {
	data, err := os.ReadFile(k.logPath)
	if err != nil {
		return err.Error()
	}
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}

// Exited reports whether the Kueue process has ended, and how.
func (k *Kueue) Exited() error {
	select {
	case <-k.done:
		err := k.waitErr
		if err == nil {
			err = errors.New("exit status 0")
		}
		return fmt.Errorf("kueue exited: %w; log %s:\n%s", err, k.logPath, k.LogTail(4000))
	default:
		return nil
	}
}

// Stop removes Kueue's webhook registrations (so the cluster keeps admitting
// objects without it), ends the process and removes a temporary Dir. The
// Kueue objects (queues, workloads) stay in the cluster.
func (k *Kueue) Stop() {
	k.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if k.cluster != nil {
			unregisterKueueWebhooks(ctx, k.cluster)
		}
		if k.cmd != nil && k.cmd.Process != nil {
			_ = k.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-k.done:
			case <-time.After(15 * time.Second):
				_ = k.cmd.Process.Kill()
				<-k.done
			}
		}
		if k.proxy != nil {
			k.proxy.Close()
		}
		if k.ownsDir {
			_ = os.RemoveAll(k.dir)
		}
	})
}

// waitReady polls Kueue's readiness probe, which passes once its webhook
// server listens.
func (k *Kueue) waitReady(ctx context.Context, healthPort int) error {
	url := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(healthPort)) + "/readyz"
	client := &http.Client{Timeout: 2 * time.Second}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, kueueStartTimeout, true, func(ctx context.Context) (bool, error) {
		if err := k.Exited(); err != nil {
			return false, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("kueue not ready at %s: %w; log %s:\n%s", url, err, k.logPath, k.LogTail(4000))
	}
	return nil
}

// checkKueueBinary fails unless path is Kueue's command built from
// KueueModule at KueueVersion.
func checkKueueBinary(path string) error {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return fmt.Errorf("kueue binary %s: %w (build it with `make kueue`: go install %s/cmd/kueue@%s)", path, err, KueueModule, KueueVersion)
	}
	if info.Main.Path != KueueModule || info.Main.Version != KueueVersion {
		return fmt.Errorf("kueue binary %s is module %s %s, want %s %s (rebuild it with `make kueue`)", path, info.Main.Path, info.Main.Version, KueueModule, KueueVersion)
	}
	return nil
}

// KueueModuleDir is Kueue's module directory at KueueVersion in the module
// cache (go mod download fetches it when the cache lacks it): its CRDs and
// webhook manifests are what StartKueue installs.
func KueueModuleDir(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", KueueModule+"@"+KueueVersion)
	// Outside any module, so that no go.mod is consulted or changed.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w: %s", KueueModule, KueueVersion, err, strings.TrimSpace(stderr.String()))
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", KueueModule, KueueVersion, err)
	}
	if mod.Error != "" || mod.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", KueueModule, KueueVersion, mod.Error)
	}
	return mod.Dir, nil
}

// installKueueCRDs creates every CRD of Kueue's config/components/crd/bases
// and waits until the API server serves Kueue's kinds.
func installKueueCRDs(ctx context.Context, c *Cluster, moduleDir string) error {
	files, err := filepath.Glob(filepath.Join(moduleDir, "config", "components", "crd", "bases", "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRDs under %s/config/components/crd/bases", moduleDir)
	}
	applier, err := NewApplier(c.RESTConfig())
	if err != nil {
		return err
	}
	for _, f := range files {
		if _, err := applier.CreateFromFile(ctx, "", f); err != nil {
			return fmt.Errorf("install Kueue CRD: %w", err)
		}
	}
	// Discovery, which Kueue's REST mapper reads at start, lists a new CRD's kinds a moment after the API
	// server serves them.
	dc, err := discovery.NewDiscoveryClientForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	want := []string{"clusterqueues", "localqueues", "resourceflavors", "workloads", "topologies", "cohorts", "admissionchecks", "workloadpriorityclasses"}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := dc.ServerResourcesForGroupVersion("kueue.x-k8s.io/v1beta2")
		if err != nil {
			return false, nil
		}
		served := map[string]bool{}
		for _, r := range list.APIResources {
			served[r.Name] = true
		}
		for _, r := range want {
			if !served[r] {
				return false, nil
			}
		}
		return true, nil
	})
}

// writeKueueConfig writes the Configuration StartKueue runs Kueue with (JSON,
// which Kueue's YAML loader reads).
func writeKueueConfig(cfg KueueConfig, path string, webhookPort, healthPort int, certDir string) error {
	conf := map[string]any{}
	if cfg.ConfigFile != "" {
		data, err := os.ReadFile(cfg.ConfigFile)
		if err != nil {
			return fmt.Errorf("read Kueue configuration: %w", err)
		}
		objs, err := DecodeManifests(data)
		if err != nil {
			return fmt.Errorf("%s: %w", cfg.ConfigFile, err)
		}
		if len(objs) != 1 || objs[0].GetKind() != "Configuration" {
			return fmt.Errorf("%s: want one document of kind Configuration (config.kueue.x-k8s.io/v1beta2)", cfg.ConfigFile)
		}
		conf = objs[0].Object
	}
	conf["apiVersion"] = "config.kueue.x-k8s.io/v1beta2"
	conf["kind"] = "Configuration"
	conf["namespace"] = KueueNamespace
	conf["webhook"] = map[string]any{"host": "127.0.0.1", "port": webhookPort, "certDir": certDir}
	conf["health"] = map[string]any{"healthProbeBindAddress": net.JoinHostPort("127.0.0.1", strconv.Itoa(healthPort))}
	conf["metrics"] = map[string]any{"bindAddress": "0"}
	conf["leaderElection"] = map[string]any{"leaderElect": false}
	conf["internalCertManagement"] = map[string]any{"enable": false}
	conf["clientConnection"] = map[string]any{"qps": 200, "burst": 400}
	// VisibilityOnDemand serves an aggregated API, which the simulated cluster does not route to: off.
	gates := map[string]any{"VisibilityOnDemand": false}
	if fg, ok := conf["featureGates"].(map[string]any); ok {
		for k, v := range fg {
			gates[k] = v
		}
	} else if conf["featureGates"] != nil {
		return fmt.Errorf("%s: featureGates must map gate names to true or false", cfg.ConfigFile)
	}
	for k, v := range cfg.FeatureGates {
		gates[k] = v
	}
	conf["featureGates"] = gates
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// freePort returns a TCP port free on 127.0.0.1 right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("listener address is not TCP")
	}
	return addr.Port, nil
}
