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
	"sync"
	"time"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/nodeagent"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// WorkloadGates are the Kubernetes 1.37 gates of the Workload API that the
// simulated cluster turns on unless Config.DisableWorkloadAPI is set.
var WorkloadGates = []string{"GenericWorkload", "DRAWorkloadResourceClaims", "TopologyAwareWorkloadScheduling", "CompositePodGroup"}

// Config of a simulated cluster.
type Config struct {
	Topology topology.Topology
	// DisableWorkloadAPI turns the WorkloadGates off (and scheduling.k8s.io/v1beta1 and v1alpha3). FeatureGates
	// CompositePodGroup: false keeps PodGroups and serves no composite groups.
	DisableWorkloadAPI bool
	// DisableResourceBetaAPIs stops serving resource.k8s.io/v1beta1 and v1beta2, which a 1.37 apiserver still
	// has but serves only when a cluster enables them; the simulated cluster enables them, so that older
	// manifests apply as they do on such clusters.
	DisableResourceBetaAPIs bool
	// FeatureGates override individual gates after WorkloadGates.
	FeatureGates map[string]bool
	// Dir holds etcd data, the kubeconfig and every node's host root
	// (<Dir>/n/<name>). Empty: a temporary directory removed on Stop. Keep it
	// short: the plugin sockets under it must fit a unix socket address.
	Dir string
	// NodeMonitorGracePeriod of the node lifecycle controller (default 20s);
	// nodes renew their Lease every quarter of it.
	NodeMonitorGracePeriod time.Duration
	// RunDuration of pods that do not restart (Job pods); default 5s.
	RunDuration time.Duration
	// DriverName of the GPU DRA driver (default gpu.nvidia.com).
	DriverName string
	// NodeComponents run on every node next to its agent instead of the
	// chart's GPU kubelet plugin (the test driver, say). Default: none, the
	// GPU plugin runs from the chart's DaemonSet.
	NodeComponents []NodeComponent
	// StartParallelism bounds how many nodes start at once (default 8).
	StartParallelism int
	// ComputeDomains turns on the chart's ComputeDomain controller,
	// compute-domain kubelet plugin and long-lived IMEX daemons (one per
	// NVLink clique node, the operator image's daemon with a stand-in IMEX).
	ComputeDomains bool
	// AuditWrites makes the API server write an audit log of every write
	// request of the operator namespace's service accounts (our components
	// as they run from the chart's pods) to Cluster.AuditLog: the server's
	// own count of their writes and of its 409 and 429 answers.
	AuditWrites bool
	// ChartValues override the simulated cluster's values of the operator's
	// chart (nested maps, as in a values file).
	ChartValues map[string]any
	// Images are extra container images the node agents run in-process.
	Images map[string]ImageRunner
	// ComponentConfig, when set, may wrap the client configuration of each
	// component that runs in-process, e.g. to count its API calls: each
	// binary of the operator image by "<binary>@<node>" (a copy of the
	// configuration its pod's service account token makes), each node
	// component by "<name>@<node>" and each container of an Images runner by
	// "<container>@<node>" (copies of the admin configuration).
	ComponentConfig func(component string, cfg *rest.Config) *rest.Config
}

// Timing is the duration of one startup phase.
type Timing struct {
	Phase    string
	Duration time.Duration
}

// Cluster is a running simulated cluster.
type Cluster struct {
	cfg       Config
	addresses *addressBlock
	dir       string
	ownsDir   bool
	// mpsStandin is the built stand-in nvidia-cuda-mps-control the GPU
	// plugins run ("" without GPU plugins).
	mpsStandin string
	tb         *componentTB
	etcd       *embeddedEtcd
	api        *apiServer
	// services relays the API server's connections to Services (webhooks) to their pods.
	services   *serviceProxy
	cancel     context.CancelFunc
	components []*runningComponent
	// client is the simulated components' (the node agents', the service proxy's) admin client.
	client kubernetes.Interface
	// userClient is Client's: an admin client on a connection of its own (ownConnection).
	userClient kubernetes.Interface
	kubeconfig string
	nodes      []*simNode
	timings    []Timing
	stopOnce   sync.Once
}

// simNode is one simulated node's running parts.
type simNode struct {
	spec       topology.NodeSpec
	agent      *nodeagent.Agent
	stopAgent  context.CancelFunc
	agentDone  chan struct{}
	components []*runningComponent
	stopComps  context.CancelFunc
}

func (c *Config) defaults() {
	if c.Topology.Profile == "" {
		c.Topology.Profile = "gb200-nvl72"
	}
	if c.NodeMonitorGracePeriod <= 0 {
		c.NodeMonitorGracePeriod = 20 * time.Second
	}
	if c.RunDuration <= 0 {
		c.RunDuration = 5 * time.Second
	}
	if c.DriverName == "" {
		c.DriverName = cdv1beta1.GPUDriverName
	}
	if c.StartParallelism <= 0 {
		c.StartParallelism = 8
	}
}

func (c Config) gates() map[string]bool {
	gates := map[string]bool{}
	for _, g := range WorkloadGates {
		gates[g] = !c.DisableWorkloadAPI
	}
	for k, v := range c.FeatureGates {
		gates[k] = v
	}
	return gates
}

// Start brings the whole cluster up and returns once every node is Ready and
// has published its devices. ctx bounds the startup only; Stop ends the
// cluster. One cluster runs per process at a time: kube-scheduler and
// kube-controller-manager register process-global names (configz, client-go's
// informer names), so a second one's components would exit at start; a test
// that needs a cluster of another shape runs in a test binary of its own.
func Start(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	cfg.defaults()
	if err := cfg.Topology.Validate(); err != nil {
		return nil, err
	}
	configureGlobalKlog()
	logger := klog.FromContext(ctx)
	c := &Cluster{cfg: cfg, dir: cfg.Dir}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	// Before anything binds an address: the block keeps other simulated
	// clusters on this machine off the node and pod IPs until Stop.
	if c.addresses, err = acquireAddressBlock(os.TempDir(), cfg.Topology.AddressOctets(), cfg.Topology.NodeCount()); err != nil {
		return nil, fmt.Errorf("reserve loopback addresses: %w", err)
	}
	logger.V(1).Info("Address block held", "addresses", c.addresses.String(), "lockDir", os.TempDir())
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "sc"); err != nil {
			return nil, err
		}
		c.ownsDir = true
	} else if err = os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, err
	}
	c.tb = newComponentTB("simcluster", c.dir, logger.WithName("control-plane"))
	runCtx, cancel := context.WithCancel(klog.NewContext(context.Background(), componentLogger()))
	c.cancel = cancel

	phase := func(name string, start time.Time) {
		c.timings = append(c.timings, Timing{Phase: name, Duration: time.Since(start)})
		logger.V(1).Info("Startup phase done", "phase", name, "duration", time.Since(start))
	}
	t := time.Now()
	if c.etcd, err = startEtcd(ctx, c.dir, c.addresses.controlPlaneIP()); err != nil {
		return nil, err
	}
	phase("etcd", t)

	t = time.Now()
	var audit []string
	if cfg.AuditWrites {
		if audit, err = auditFlags(c.dir); err != nil {
			return nil, err
		}
	}
	if c.services, err = startServiceProxy(c.dir); err != nil {
		return nil, err
	}
	egress, err := c.services.egressSelectorFlag(c.dir)
	if err != nil {
		return nil, err
	}
	if c.api, err = startAPIServer(c.tb, c.etcd, cfg.gates(), !cfg.DisableResourceBetaAPIs, append(audit, egress)...); err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(c.api.Config)
	if err != nil {
		return nil, err
	}
	c.client = client
	if c.userClient, err = kubernetes.NewForConfig(ownConnection(c.api.Config)); err != nil {
		return nil, err
	}
	c.services.setClient(client)
	c.kubeconfig = filepath.Join(c.dir, "kubeconfig")
	if err := WriteKubeconfig(c.api.Config, c.kubeconfig); err != nil {
		return nil, err
	}
	phase("kube-apiserver", t)

	if cfg.NodeComponents == nil {
		t = time.Now()
		if c.mpsStandin, err = buildMPSControlStandin(ctx, c.dir); err != nil {
			return nil, err
		}
		phase("build the MPS control stand-in", t)
	}

	t = time.Now()
	// Before the controller manager starts, so that its garbage collector
	// knows the ComputeDomain kinds from its first discovery.
	if err := c.installOperator(ctx); err != nil {
		return nil, err
	}
	phase("helm install", t)

	t = time.Now()
	sched, err := startScheduler(runCtx, c.kubeconfig)
	if err != nil {
		return nil, err
	}
	c.components = append(c.components, sched)
	kcm, err := startControllerManager(runCtx, c.kubeconfig, cfg.NodeMonitorGracePeriod)
	if err != nil {
		return nil, err
	}
	c.components = append(c.components, kcm)
	phase("scheduler+controllers", t)

	t = time.Now()
	if err := c.startNodes(ctx, runCtx); err != nil {
		return nil, err
	}
	phase("nodes", t)

	t = time.Now()
	if err := c.waitForDevices(ctx); err != nil {
		return nil, err
	}
	phase("resourceslices", t)
	for _, comp := range c.components {
		if err := comp.Exited(runCtx); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *Cluster) startNodes(ctx, runCtx context.Context) error {
	specs, err := c.cfg.Topology.Nodes(c.addresses.base)
	if err != nil {
		return err
	}
	c.nodes = make([]*simNode, len(specs))
	leaseRenew := c.cfg.NodeMonitorGracePeriod / 4
	sem := make(chan struct{}, c.cfg.StartParallelism)
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i, spec := range specs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c.nodes[i], errs[i] = c.startNode(ctx, runCtx, spec, leaseRenew)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (c *Cluster) startNode(ctx, runCtx context.Context, spec topology.NodeSpec, leaseRenew time.Duration) (*simNode, error) {
	// Short names: unix socket paths must stay within 107 bytes.
	paths := nodeagent.PathsFor(filepath.Join(c.dir, "n", spec.Name))
	drivers := []string{c.cfg.DriverName}
	if c.cfg.ComputeDomains {
		drivers = append(drivers, ComputeDomainDriverName)
	}
	for _, driver := range drivers {
		if err := checkSocketPaths(paths, driver); err != nil {
			return nil, err
		}
	}
	if err := fakeHostRoot(spec, paths.Root); err != nil {
		return nil, err
	}
	agent, err := nodeagent.New(nodeagent.Config{
		Node:          NodeObject(spec),
		Client:        c.client,
		Paths:         paths,
		LeaseDuration: c.cfg.NodeMonitorGracePeriod,
		RenewInterval: leaseRenew,
		RunDuration:   c.cfg.RunDuration,
		Runtime:       podRuntime{configFor: c.componentConfig, images: c.cfg.Images, api: c.api.proxy},
		APIServer:     c.api.podAccess,
	})
	if err != nil {
		return nil, err
	}
	n := &simNode{spec: spec, agent: agent, agentDone: make(chan struct{})}
	agentCtx, stopAgent := context.WithCancel(runCtx)
	n.stopAgent = stopAgent
	var agentErr error
	go func() {
		defer close(n.agentDone)
		agentErr = agent.Run(agentCtx)
	}()
	select {
	case <-agent.Ready():
	case <-n.agentDone:
		return n, fmt.Errorf("node agent %s: %w", spec.Name, agentErr)
	case <-ctx.Done():
		return n, ctx.Err()
	}
	compCtx, stopComps := context.WithCancel(runCtx)
	n.stopComps = stopComps
	env := NodeEnv{Spec: spec, Paths: paths, Client: c.client, RESTConfig: c.api.Config, Kubeconfig: c.kubeconfig, DriverName: c.cfg.DriverName}
	for _, comp := range c.cfg.NodeComponents {
		compEnv := env
		compEnv.RESTConfig = c.componentConfig(comp.Name+"@"+spec.Name, c.api.Config)
		n.components = append(n.components, runComponent(comp.Name+"@"+spec.Name, func() error { return comp.Run(compCtx, compEnv) }))
	}
	return n, nil
}

// maxSocketPath is the longest unix socket path Linux accepts (108 bytes
// with the terminating NUL).
const maxSocketPath = 107

// checkSocketPaths refuses a Dir so deep that the plugin sockets of a node
// would not fit in a unix socket address.
func checkSocketPaths(paths nodeagent.Paths, driver string) error {
	for _, sock := range []string{
		filepath.Join(paths.PluginsRegistry, driver+"-reg.sock"),
		filepath.Join(paths.Plugins, driver, "dra.sock"),
	} {
		if len(sock) > maxSocketPath {
			return fmt.Errorf("socket path %s is %d bytes, more than the %d a unix socket allows: choose a shorter Dir (--dir)", sock, len(sock), maxSocketPath)
		}
	}
	return nil
}

// waitForDevices waits until every node has a ResourceSlice of each DRA
// driver and every node is Ready. Listing every slice costs the API server:
// a large cluster is polled less often, and given longer (1,026 nodes on 2
// busy cores needed more than 2 minutes after their agents were up).
func (c *Cluster) waitForDevices(ctx context.Context) error {
	want := len(c.nodes)
	interval := 100 * time.Millisecond * time.Duration(max(1, want/64))
	timeout := 2*time.Minute + time.Duration(want)*300*time.Millisecond
	return wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		// A control-plane component that ended (kube-scheduler, kube-controller-manager) says why at once,
		// instead of as a timeout.
		for _, comp := range c.components {
			if err := comp.Exited(ctx); err != nil {
				return false, err
			}
		}
		for _, n := range c.nodes {
			for _, comp := range n.components {
				if err := comp.Exited(ctx); err != nil {
					return false, err
				}
			}
		}
		slices, err := c.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		drivers := []string{c.cfg.DriverName}
		if c.cfg.ComputeDomains {
			drivers = append(drivers, ComputeDomainDriverName)
		}
		for _, driver := range drivers {
			seen := map[string]bool{}
			for _, s := range slices.Items {
				if s.Spec.Driver == driver && s.Spec.NodeName != nil {
					seen[*s.Spec.NodeName] = true
				}
			}
			if len(seen) < want {
				return false, nil
			}
		}
		nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, node := range nodes.Items {
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready >= want, nil
	})
}

// Client is an admin client of the cluster, on a connection of its own (ownConnection).
func (c *Cluster) Client() kubernetes.Interface { return c.userClient }

// RESTConfig is the admin REST configuration; each client made from it has a connection of its own
// (ownConnection).
func (c *Cluster) RESTConfig() *rest.Config { return ownConnection(c.api.Config) }

// Timings are the startup phases.
func (c *Cluster) Timings() []Timing { return append([]Timing{}, c.timings...) }

// Nodes are the simulated nodes.
func (c *Cluster) Nodes() []topology.NodeSpec {
	specs := make([]topology.NodeSpec, 0, len(c.nodes))
	for _, n := range c.nodes {
		specs = append(specs, n.spec)
	}
	return specs
}

// NodePaths are a node's host-root directories.
func (c *Cluster) NodePaths(node string) (nodeagent.Paths, error) {
	n, err := c.node(node)
	if err != nil {
		return nodeagent.Paths{}, err
	}
	return n.agent.Paths(), nil
}

// StopNodeAgent stops a node's agent (the kubelet) on purpose; the node's
// plugins and the containers the agent started keep running, as on a real
// node. The node lifecycle controller will mark it NotReady.
func (c *Cluster) StopNodeAgent(node string) error {
	n, err := c.node(node)
	if err != nil {
		return err
	}
	n.stopAgent()
	select {
	case <-n.agentDone:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("node agent %s did not stop within 30s", node)
	}
}

// PowerOffNode ends everything a node runs, as a node that loses power or is taken out of the cluster: its
// agent, its node components and every container its agent started (their listeners close and the connections
// to them break). It returns once all have ended. A node whose agent was stopped (StopNodeAgent) keeps its
// containers running; power it off before its Node and pods are deleted, or its containers live on as zombies
// whose service account tokens the API server no longer accepts (their pods are gone) while the API server's
// kept-alive connections may still reach them (a webhook answering every call with Unauthorized, say).
func (c *Cluster) PowerOffNode(node string) error {
	n, err := c.node(node)
	if err != nil {
		return err
	}
	n.powerOff()
	return n.waitOff()
}

// powerOff tells everything the node runs to end (its node components, its agent; the agent's containers
// when waitOff has seen the agent end).
func (n *simNode) powerOff() {
	if n.stopComps != nil {
		n.stopComps()
	}
	n.stopAgent()
}

// waitOff waits, after powerOff, for the node's components and agent to end, then ends the containers its agent
// started and waits for them.
func (n *simNode) waitOff() error {
	var errs []error
	for _, comp := range n.components {
		select {
		case <-comp.done: // a component's exit error after its context ended says nothing of the node
		case <-time.After(30 * time.Second):
			errs = append(errs, fmt.Errorf("%s did not stop within 30s", comp.name))
		}
	}
	select {
	case <-n.agentDone:
	case <-time.After(30 * time.Second):
		errs = append(errs, fmt.Errorf("node agent %s did not stop within 30s", n.spec.Name))
	}
	n.agent.StopContainers()
	return errors.Join(errs...)
}

// RemoveNode takes a node out of the cluster as an operator does with a node that is gone: powers it off
// (PowerOffNode), deletes its Node and force-deletes its pods, as the pod garbage collector does for the pods
// of a deleted node (a DaemonSet rollout would otherwise wait for ever on a pod no kubelet terminates).
func (c *Cluster) RemoveNode(ctx context.Context, node string) error {
	if err := c.PowerOffNode(node); err != nil {
		return fmt.Errorf("power off node %s: %w", node, err)
	}
	if err := c.client.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete node %s: %w", node, err)
	}
	pods, err := c.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return fmt.Errorf("list the pods of node %s: %w", node, err)
	}
	for _, p := range pods.Items {
		err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("force-delete pod %s/%s of node %s: %w", p.Namespace, p.Name, node, err)
		}
	}
	return nil
}

// CutAPIServer takes the API server away from the pods the nodes run (the operator's components): their
// connections are cut and new ones refused, as a stopped API server or a network partition would, until
// RestoreAPIServer. The control plane and the node agents keep their own connections.
func (c *Cluster) CutAPIServer() { c.api.proxy.SetDown(true) }

// RestoreAPIServer gives the pods their API server back.
func (c *Cluster) RestoreAPIServer() { c.api.proxy.SetDown(false) }

// KillContainer ends a container that a node runs in-process (an IMEX
// daemon, say) as a crashed process would; the pod's restart policy applies.
func (c *Cluster) KillContainer(node, namespace, pod, container string) error {
	n, err := c.node(node)
	if err != nil {
		return err
	}
	return n.agent.KillContainer(namespace, pod, container)
}

func (c *Cluster) node(name string) (*simNode, error) {
	for _, n := range c.nodes {
		if n != nil && n.spec.Name == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("node %q is not part of the simulated cluster", name)
}

// Stop shuts everything down in reverse order, removes a temporary Dir and
// gives the cluster's loopback addresses back.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		// Every node told first, then each waited for: the nodes end together.
		for _, n := range c.nodes {
			if n != nil {
				n.powerOff()
			}
		}
		for _, n := range c.nodes {
			if n != nil {
				_ = n.waitOff()
			}
		}
		c.stopMPSDaemons(context.Background())
		if c.cancel != nil {
			c.cancel()
		}
		for _, comp := range c.components {
			_ = comp.Wait(30 * time.Second)
		}
		if c.api != nil {
			c.api.Stop()
		}
		if c.services != nil {
			c.services.close()
		}
		if c.tb != nil {
			c.tb.close()
		}
		if c.etcd != nil {
			c.etcd.Close()
		}
		if c.ownsDir {
			_ = os.RemoveAll(c.dir)
		}
		// Last: nothing of the cluster listens on its addresses any more.
		if c.addresses != nil {
			c.addresses.release()
		}
	})
}
