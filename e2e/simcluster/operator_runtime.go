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
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	cdcontroller "github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-controller/app"
	cddaemon "github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-daemon/app"
	cdplugin "github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-kubelet-plugin/app"
	cdmetering "github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-metering/app"
	webhookapp "github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-webhook/app"
	gpuapp "github.com/computedomain-operator/computedomain-operator/cmd/gpu-kubelet-plugin/app"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/nodeagent"
	"github.com/computedomain-operator/computedomain-operator/internal/imex/standin"
)

// OperatorImageRepository is the chart's image (image.repository). The node
// runtime runs containers of this image, whatever their tag, as our binaries
// in-process: the container's command names the binary, as in the image.
const OperatorImageRepository = "ghcr.io/computedomain-operator/computedomain-operator"

// Binary runs one of the operator image's binaries in-process: what its main
// would do with the container's arguments (command excluded) and environment,
// given the client configuration a pod's service account token makes.
type Binary func(ctx context.Context, restConfig *rest.Config, args []string, env map[string]string) error

// Binaries are the operator image's binaries the simulated nodes run from
// their pods, by name (cmd/<name>). The API server reaches the webhook's pod
// through its Service by the simulated service network (serviceProxy).
var Binaries = map[string]Binary{
	"compute-domain-webhook": func(ctx context.Context, cfg *rest.Config, args []string, _ map[string]string) error {
		return webhookapp.RunWithConfig(ctx, cfg, args)
	},
	"gpu-kubelet-plugin": func(ctx context.Context, cfg *rest.Config, args []string, env map[string]string) error {
		err := gpuapp.RunWithConfig(ctx, cfg, args, env)
		// A container's processes end with it: the MPS control daemons the
		// plugin started, processes of their own here, are killed as a real
		// container's would be (their directories stay on the node).
		killMPSDaemonsOf(args, env)
		return err
	},
	"compute-domain-kubelet-plugin": cdplugin.RunWithConfig,
	"compute-domain-metering":       cdmetering.RunWithConfig,
	"compute-domain-controller": func(ctx context.Context, cfg *rest.Config, args []string, _ map[string]string) error {
		return cdcontroller.RunWithConfig(ctx, cfg, args)
	},
	// The IMEX daemon supervises the stand-in IMEX in its own process
	// instead of nvidia-imex, on imexNetwork.
	"compute-domain-daemon": func(ctx context.Context, cfg *rest.Config, args []string, env map[string]string) error {
		return cddaemon.RunWithConfig(ctx, cfg, args, env, cddaemon.WithIMEX(standin.InProcessOn(imexNetwork)))
	},
}

// imexNetwork is what the host's loopback network is to stand-in IMEX
// daemons in processes of their own, for those of the simulated nodes, which
// are goroutines of this process: their peer links and command-port queries
// are in-memory connections with TCP's behavior (a stopped or killed daemon's
// peers read EOF at once; a dial to a daemon that is not listening is
// refused), and cost no file descriptor (48 per node with TCP at 72 nodes
// before, half of them these links; docs/benchmarks.md, "1,024 nodes"). Like
// the loopback network it is one per process; clusters in one process take
// distinct address blocks. The stand-in binary (cmd/imex-standin) keeps TCP.
var imexNetwork = standin.NewMemoryNetwork()

// ImageRunner runs a container of another image in-process (Config.Images).
type ImageRunner func(ctx context.Context, restConfig *rest.Config, c nodeagent.Container) error

// podRuntime is the node agents' container runtime: containers of the
// operator image run as Binaries, those of Config.Images by their runner,
// and every other image stays simulated by the node agent.
type podRuntime struct {
	// configFor lets Config.ComponentConfig wrap each container's client
	// configuration, by "<binary or container>@<node>".
	configFor func(component string, cfg *rest.Config) *rest.Config
	images    map[string]ImageRunner
	// api is the relay the pods reach the API server through (nil: over the network).
	api apiDialer
}

// apiDialer connects a pod's client to the API server relay in-process.
type apiDialer interface {
	Addr() string
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

func imageRepository(image string) string {
	if i := strings.LastIndex(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image
}

func (r podRuntime) Handles(image string) bool {
	if imageRepository(image) == OperatorImageRepository {
		return true
	}
	_, ok := r.images[image]
	return ok
}

func (r podRuntime) Run(ctx context.Context, c nodeagent.Container) error {
	if err := os.MkdirAll(c.NodeRoot, 0o750); err != nil {
		return err
	}
	restConfig, err := inClusterConfig(c, r.api)
	if err != nil {
		return fmt.Errorf("%s: client configuration: %w", c, err)
	}
	if restConfig.Transport != nil {
		// A process's connections end with it.
		defer utilnet.CloseIdleConnectionsFor(restConfig.Transport)
	}
	if run, ok := r.images[c.Container.Image]; ok {
		return run(ctx, r.configFor(c.Container.Name+"@"+c.Pod.Spec.NodeName, restConfig), c)
	}
	if len(c.Args) == 0 {
		return fmt.Errorf("%s: the operator image has no entrypoint: the container's command must name a binary (one of %s)", c, strings.Join(binaryNames(), ", "))
	}
	name := filepath.Base(c.Args[0])
	run, ok := Binaries[name]
	if !ok {
		return fmt.Errorf("%s: command %q: the operator image has no such binary (allowed: %s)", c, c.Args[0], strings.Join(binaryNames(), ", "))
	}
	// The binary's goroutines carry its name as ComponentLabel: a CPU profile of the process tells its CPU
	// time (all its containers on all nodes) from the rest of the cluster's.
	pprof.Do(ctx, pprof.Labels(ComponentLabel, name), func(ctx context.Context) {
		err = run(ctx, r.configFor(name+"@"+c.Pod.Spec.NodeName, restConfig), c.Args[1:], c.Env)
	})
	return err
}

func binaryNames() []string {
	names := make([]string, 0, len(Binaries))
	for name := range Binaries {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// inClusterConfig is rest.InClusterConfig inside the container's view: the
// API server from KUBERNETES_SERVICE_HOST/PORT, the token and CA from the
// service account mount (the token file is re-read as the node renews it).
// A container without a service account token (automountServiceAccountToken:
// false, as the chart's webhook has without webhook.podGroups) runs as in a
// real pod: a binary that never calls the API server works, and each call of
// one that does fails naming the token file that is not there.
//
// When the address is the relay's (api), the container's clients share one
// transport of their own, client-go's (TLS with the mount's CA, HTTP/2,
// its timeouts), that dials the relay in-process: one connection per
// container, as a real container's clients share client-go's cached
// transport and its connection.
func inClusterConfig(c nodeagent.Container, api apiDialer) (*rest.Config, error) {
	host, port := c.Env["KUBERNETES_SERVICE_HOST"], c.Env["KUBERNETES_SERVICE_PORT"]
	if host == "" || port == "" {
		host, port = "kubernetes.default.svc", "443"
	}
	address := net.JoinHostPort(host, port)
	cfg := &rest.Config{Host: "https://" + address}
	if dir, ok := c.Mounts[nodeagent.ServiceAccountMountPath]; ok {
		cfg.BearerTokenFile = filepath.Join(dir, "token")
		tlsConfig := rest.TLSClientConfig{CAFile: filepath.Join(dir, "ca.crt")}
		if api == nil || api.Addr() != address {
			cfg.TLSClientConfig = tlsConfig
			return cfg, nil
		}
		rt, err := transport.New(&transport.Config{
			TLS:        transport.TLSConfig{CAFile: tlsConfig.CAFile},
			DialHolder: &transport.DialHolder{Dial: api.DialContext},
		})
		if err != nil {
			return nil, err
		}
		cfg.Transport = rt
		return cfg, nil
	}
	// No mount: the token's path in the container's view, where nothing is.
	cfg.BearerTokenFile = filepath.Join(c.NodeRoot, "no-service-account-token", "token")
	cfg.Insecure = true
	return cfg, nil
}
