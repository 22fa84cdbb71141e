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
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// ControlPlaneConfig selects the parts of a bare control plane: embedded etcd and kube-apiserver always,
// the kube-controller-manager controllers named here, and kube-scheduler when the caller starts one. No
// node agents, no operator, no DeviceClasses: the caller writes the objects it needs (Node objects and
// ResourceSlices, say) itself. For benchmarks of the control plane's side of DRA.
type ControlPlaneConfig struct {
	// Dir holds etcd data and the kubeconfig. Empty: a temporary directory removed on Stop.
	Dir string
	// FeatureGates of kube-apiserver and the components it runs with; none by default (the 1.37
	// defaults).
	FeatureGates map[string]bool
	// Controllers of kube-controller-manager, by name (see Controllers); none: no controller manager.
	Controllers []string
}

// ControlPlane is a running bare control plane (StartControlPlane).
type ControlPlane struct {
	dir        string
	ownsDir    bool
	tb         *componentTB
	etcd       *embeddedEtcd
	api        *apiServer
	client     kubernetes.Interface
	kubeconfig string
	cancel     context.CancelFunc
	kcm        *runningComponent
	stopOnce   sync.Once
}

// StartControlPlane starts etcd, kube-apiserver and the configured controllers on 127.0.0.1 and returns
// once the API server serves. ctx bounds the startup only; Stop ends it.
func StartControlPlane(ctx context.Context, cfg ControlPlaneConfig) (_ *ControlPlane, err error) {
	configureGlobalKlog()
	cp := &ControlPlane{dir: cfg.Dir}
	defer func() {
		if err != nil {
			cp.Stop()
		}
	}()
	if cp.dir == "" {
		if cp.dir, err = os.MkdirTemp("", "cp"); err != nil {
			return nil, err
		}
		cp.ownsDir = true
	} else if err = os.MkdirAll(cp.dir, 0o755); err != nil {
		return nil, err
	}
	cp.tb = newComponentTB("control-plane", cp.dir, klog.FromContext(ctx).WithName("control-plane"))
	if cp.etcd, err = startEtcd(ctx, cp.dir, "127.0.0.1"); err != nil {
		return nil, err
	}
	if cp.api, err = startAPIServer(cp.tb, cp.etcd, cfg.FeatureGates, false); err != nil {
		return nil, err
	}
	if cp.client, err = kubernetes.NewForConfig(ownConnection(cp.api.Config)); err != nil {
		return nil, err
	}
	cp.kubeconfig = filepath.Join(cp.dir, "kubeconfig")
	if err = WriteKubeconfig(cp.api.Config, cp.kubeconfig); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(klog.NewContext(context.Background(), componentLogger()))
	cp.cancel = cancel
	if len(cfg.Controllers) > 0 {
		if cp.kcm, err = startControllers(runCtx, cp.kubeconfig, cfg.Controllers); err != nil {
			return nil, err
		}
	}
	return cp, nil
}

// Client is an admin client (QPS 500, burst 1000), on a connection of its own (ownConnection).
func (cp *ControlPlane) Client() kubernetes.Interface { return cp.client }

// RESTConfig is the admin REST configuration; each client made from it has a connection of its own
// (ownConnection).
func (cp *ControlPlane) RESTConfig() *rest.Config { return ownConnection(cp.api.Config) }

// Kubeconfig is the path of an admin kubeconfig.
func (cp *ControlPlane) Kubeconfig() string { return cp.kubeconfig }

// StartScheduler starts a kube-scheduler (default profile, QPS 500) and returns a function that stops
// it and waits until it has. Several may run one after another in one process.
func (cp *ControlPlane) StartScheduler(ctx context.Context) (stop func() error, err error) {
	schedCtx, cancel := context.WithCancel(klog.NewContext(ctx, componentLogger()))
	sched, err := startScheduler(schedCtx, cp.kubeconfig)
	if err != nil {
		cancel()
		return nil, err
	}
	return func() error {
		cancel()
		// Canceled, app.Run returns "finished without leader elect": not a failure.
		select {
		case <-sched.done:
			return nil
		case <-time.After(30 * time.Second):
			return errors.New("kube-scheduler did not stop within 30s")
		}
	}, nil
}

// Stop shuts everything down and removes a temporary Dir.
func (cp *ControlPlane) Stop() {
	cp.stopOnce.Do(func() {
		if cp.cancel != nil {
			cp.cancel()
		}
		if cp.kcm != nil {
			_ = cp.kcm.Wait(30 * time.Second)
		}
		if cp.api != nil {
			cp.api.Stop()
		}
		if cp.tb != nil {
			cp.tb.close()
		}
		if cp.etcd != nil {
			cp.etcd.Close()
		}
		if cp.ownsDir {
			_ = os.RemoveAll(cp.dir)
		}
	})
}

// startControllers runs kube-controller-manager with only the named controllers (the simulated
// cluster's startControllerManager runs the fixed set Controllers with node-lifecycle settings).
func startControllers(ctx context.Context, kubeconfig string, controllers []string) (*runningComponent, error) {
	for _, name := range controllers {
		if !slices.Contains(Controllers, name) {
			return nil, fmt.Errorf("controller %q: allowed: %s", name, strings.Join(Controllers, ", "))
		}
	}
	return runControllerManager(ctx, []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
		"--controllers=" + strings.Join(controllers, ","),
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
	})
}
