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
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	cdcontroller "github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-controller/app"
	cddaemon "github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-daemon/app"
	cdplugin "github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-kubelet-plugin/app"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/nodeagent"
	"github.com/computedomain-operator/computedomain-operator/internal/imex/standin"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// Names of the ComputeDomain installation in the simulated cluster.
const (
	// OperatorNamespace holds the per-domain DaemonSets and daemon pods.
	OperatorNamespace = "computedomain-operator"
	// DaemonImage is the image the controller puts in daemon pods; node
	// agents run it in-process (ComputeDomainDaemonRunner).
	DaemonImage = "simcluster.local/compute-domain-daemon:sim"
	// ComputeDomainDriverName is the compute-domain DRA driver.
	ComputeDomainDriverName = cdv1beta1.ComputeDomainDriverName
)

// installCRDs creates the chart's CRDs and waits until they are served.
func installCRDs(ctx context.Context, cfg *rest.Config, applier *Applier) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(root, "charts/computedomain-operator/crds/*.yaml"))
	if err != nil {
		return fmt.Errorf("list CRDs: %w", err)
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRDs under %s", filepath.Join(root, "charts/computedomain-operator/crds"))
	}
	var names []string
	for _, f := range files {
		objs, err := applier.CreateFromFile(ctx, "", f)
		if err != nil {
			return fmt.Errorf("install CRD %s: %w", filepath.Base(f), err)
		}
		for _, o := range objs {
			names = append(names, o.GetName())
		}
	}
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			established := false
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					established = true
				}
			}
			if !established {
				return false, nil
			}
		}
		return true, nil
	})
}

// startComputeDomainController creates the operator namespace and runs the
// ComputeDomain controller in-process until runCtx ends (the CRDs are
// installed already).
func (c *Cluster) startComputeDomainController(ctx, runCtx context.Context) error {
	_, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OperatorNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", OperatorNamespace, err)
	}
	args := []string{
		"--namespace=" + OperatorNamespace,
		"--daemon-image=" + DaemonImage,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
	}
	if _, verbose := os.LookupEnv(KlogEnv); !verbose {
		// The controller logs with its own logger, not the context's: keep
		// only its errors, like the rest of the control plane.
		args = append(args, "-v=-1")
	}
	restConfig := c.componentConfig(ControllerComponent)
	c.components = append(c.components, runComponent(ControllerComponent, func() error {
		return cdcontroller.RunWithConfig(runCtx, restConfig, args)
	}))
	return nil
}

// ComputeDomainPluginComponent runs the compute-domain kubelet plugin
// in-process on each node with the paths of the node's host root.
func ComputeDomainPluginComponent() NodeComponent {
	return NodeComponent{
		Name: ComputeDomainPluginName,
		Run: func(ctx context.Context, env NodeEnv) error {
			args := []string{
				"--node-name=" + env.Spec.Name,
				"--driver-name=" + ComputeDomainDriverName,
				"--operator-namespace=" + OperatorNamespace,
				"--host-root=" + env.Paths.Root,
				"--cdi-root=" + env.Paths.CDI,
				"--kubelet-registrar-directory-path=" + env.Paths.PluginsRegistry,
				"--kubelet-plugins-directory-path=" + env.Paths.Plugins,
			}
			// Dynamic MIG: only the GPU plugin's mock creates the static MIG
			// devices mirrored into the shared fake host root.
			args = append(append(args, mockNVMLArgs(env)...), "--nvml-mock-mig=dynamic")
			return cdplugin.RunWithConfig(ctx, env.RESTConfig, args, nil)
		},
	}
}

// ImageRunner runs one container of a known image in-process.
type ImageRunner func(ctx context.Context, restConfig *rest.Config, c nodeagent.Container) error

// ComputeDomainDaemonRunner runs the compute-domain daemon of a daemon pod
// with the IMEX stand-in in the same process (the simulated nodes have no
// nvidia-imex).
func ComputeDomainDaemonRunner(ctx context.Context, restConfig *rest.Config, c nodeagent.Container) error {
	return cddaemon.RunWithConfig(ctx, restConfig, flagsOnly(c.Args), c.Env, cddaemon.WithIMEX(standin.InProcess))
}

// flagsOnly drops the command (the leading words that are not flags).
func flagsOnly(args []string) []string {
	for i, a := range args {
		if strings.HasPrefix(a, "-") {
			return args[i:]
		}
	}
	return nil
}

// imageRuntime is the nodeagent.ContainerRuntime of the simulated nodes:
// images with a registered runner run in-process.
type imageRuntime struct {
	// configFor gives each container its client configuration, by
	// "<container>@<node>".
	configFor func(component string) *rest.Config
	runners   map[string]ImageRunner
}

func (r imageRuntime) Handles(image string) bool {
	_, ok := r.runners[image]
	return ok
}

func (r imageRuntime) Run(ctx context.Context, c nodeagent.Container) error {
	if err := os.MkdirAll(c.NodeRoot, 0o750); err != nil {
		return err
	}
	return r.runners[c.Container.Image](ctx, r.configFor(c.Container.Name+"@"+c.Pod.Spec.NodeName), c)
}
