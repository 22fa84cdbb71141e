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

package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	pluginwatcherapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/kubernetes/pkg/kubelet/cm/dra"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/config"
)

// Config of one node agent.
type Config struct {
	// Node is the Node to register: name, labels, capacity, addresses.
	Node *corev1.Node
	// Client talks to the cluster.
	Client kubernetes.Interface
	// Paths are the node's host-root directories.
	Paths Paths
	// LeaseDuration and RenewInterval of the node heartbeat (kubelet
	// defaults: 40s and 10s).
	LeaseDuration time.Duration
	RenewInterval time.Duration
	// RunDuration is how long the containers of a pod that does not restart
	// (a Job's pod) run before they exit 0. Zero means they run until deleted.
	// It applies to pods without a container of a Runtime image.
	RunDuration time.Duration
	// Runtime runs containers of known images in-process (optional).
	Runtime ContainerRuntime
	// APIServer is how the Runtime's containers reach the API server with
	// their pod's service account token.
	APIServer APIServer
	// FastRetry retries a failed NodePrepareResources after the agent's short
	// backoff (0.2 s doubling to 10 s) instead of at the kubelet's pod resync
	// (60-90 s, see podResyncDelay). It is for unit-speed tests of retry
	// logic only: a figure measured with it is not what a real node shows, so
	// no benchmark may use it.
	FastRetry bool
}

// Agent is the kubelet's stand-in on one simulated node.
type Agent struct {
	cfg    Config
	nodeIP string
	// podIPs hands out the pods' addresses.
	podIPs *podAddresses
	dra    *dra.Manager
	queue  workqueue.TypedRateLimitingInterface[string]

	// recorder emits the kubelet's events (core/v1, as the kubelet does).
	recorder record.EventRecorder

	mu       sync.Mutex
	pods     map[string]*podState // by namespace/name
	informer cache.SharedIndexInformer
	ready    chan struct{}
	// workers are the pods' syncs in flight: one goroutine per pod, as the
	// kubelet's pod workers.
	workers sync.WaitGroup

	// containers outlive Run, as containers outlive a kubelet that stops;
	// StopContainers ends them.
	containers    context.Context
	endContainers context.CancelFunc
	running       sync.WaitGroup
}

// podState is what the agent remembers of a pod it runs.
type podState struct {
	pod       *corev1.Pod
	prepared  bool
	startedAt time.Time
	// finished: the pod's containers will not run again; its phase becomes
	// terminal once its claims are unprepared.
	finished bool
	// exitCode is the finished pod's, for its terminal phase.
	exitCode int32
	// retryAt is when a failed prepare is tried again (the pod resync),
	// unless the pod object changes first from failedPod.
	retryAt   time.Time
	failedPod *corev1.Pod
	// containers are the pod's containers run by the Runtime, by name.
	containers map[string]*runningContainer
	// stopToken ends the renewal of the pod's service account token.
	stopToken context.CancelFunc
}

// New checks the configuration and creates the node's directories.
func New(cfg Config) (*Agent, error) {
	if cfg.Node == nil || cfg.Node.Name == "" {
		return nil, errors.New("node agent: Node with a name is required")
	}
	if cfg.Client == nil {
		return nil, errors.New("node agent: Client is required")
	}
	if cfg.Paths.Root == "" {
		return nil, errors.New("node agent: Paths.Root is required")
	}
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = 40 * time.Second
	}
	if cfg.RenewInterval <= 0 {
		cfg.RenewInterval = 10 * time.Second
	}
	if err := cfg.Paths.Create(); err != nil {
		return nil, fmt.Errorf("node agent %s: %w", cfg.Node.Name, err)
	}
	containers, stop := context.WithCancel(context.Background())
	a := &Agent{
		cfg:           cfg,
		pods:          map[string]*podState{},
		ready:         make(chan struct{}),
		containers:    containers,
		endContainers: stop,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, 10*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "nodeagent-" + cfg.Node.Name}),
	}
	for _, addr := range cfg.Node.Status.Addresses {
		if addr.Type == corev1.NodeInternalIP {
			a.nodeIP = addr.Address
		}
	}
	podIPs, err := newPodAddresses(a.nodeIP)
	if err != nil {
		return nil, fmt.Errorf("node agent %s: %w", cfg.Node.Name, err)
	}
	a.podIPs = podIPs
	return a, nil
}

// NodeName is the name of the agent's node.
func (a *Agent) NodeName() string { return a.cfg.Node.Name }

// Paths are the agent's host-root directories.
func (a *Agent) Paths() Paths { return a.cfg.Paths }

// Ready is closed once the node is registered and the agent watches its pods
// and its plugin registry.
func (a *Agent) Ready() <-chan struct{} { return a.ready }

// Run registers the node and works until ctx ends; then it stops without
// touching the node's objects, and the containers it started keep running
// (as when a kubelet stops) until StopContainers.
func (a *Agent) Run(ctx context.Context) error {
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "node", a.cfg.Node.Name)
	ctx = klog.NewContext(ctx, logger)
	defer a.queue.ShutDown()

	node, err := registerNode(ctx, a.cfg.Client, a.cfg.Node)
	if err != nil {
		return err
	}
	if err := renewLease(ctx, a.cfg.Client, node, a.cfg.LeaseDuration); err != nil {
		return fmt.Errorf("node %s: first lease: %w", node.Name, err)
	}
	go heartbeat(ctx, a.cfg.Client, node, a.cfg.LeaseDuration, a.cfg.RenewInterval)

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: a.cfg.Client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	a.recorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: node.Name})

	factory := informers.NewSharedInformerFactoryWithOptions(a.cfg.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", node.Name).String()
		}))
	a.informer = factory.Core().V1().Pods().Informer()
	if _, err := a.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    a.enqueue,
		UpdateFunc: func(_, obj any) { a.enqueue(obj) },
		DeleteFunc: a.enqueue,
	}); err != nil {
		return fmt.Errorf("node %s: watch pods: %w", node.Name, err)
	}

	// The kubelet's DRA manager: checkpoint under the kubelet state dir,
	// plugins found through the registry directory.
	manager, err := dra.NewManager(logger, a.cfg.Client, a.cfg.Paths.KubeletState)
	if err != nil {
		return fmt.Errorf("node %s: DRA manager: %w", node.Name, err)
	}
	a.dra = manager
	sources := kubeletconfig.NewSourcesReady(func(sets.Set[string]) bool { return a.informer.HasSynced() })
	getNode := func(context.Context) (*corev1.Node, error) { return node, nil }
	if err := manager.Start(ctx, a.activePods, getNode, sources); err != nil {
		return fmt.Errorf("node %s: start DRA manager: %w", node.Name, err)
	}
	defer manager.Stop()
	plugins := newPluginRegistration(a.cfg.Paths.PluginsRegistry, KubeletReconcileInterval)
	plugins.AddHandler(pluginwatcherapi.DRAPlugin, manager.GetWatcherHandler())
	go func() {
		if err := plugins.Run(ctx); err != nil {
			logger.Error(err, "Plugin registration stopped: no plugin registers on this node")
		}
	}()
	go a.watchDeviceHealth(ctx)

	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), a.informer.HasSynced) {
		return ctx.Err()
	}
	close(a.ready)
	logger.V(2).Info("Node agent ready")

	go func() {
		<-ctx.Done()
		a.queue.ShutDown()
	}()
	for a.processNext(ctx) {
	}
	a.workers.Wait()
	return nil
}

// StopContainers ends every container the agent runs in-process and waits
// for them (the node is going away).
func (a *Agent) StopContainers() {
	a.endContainers()
	a.running.Wait()
}

func (a *Agent) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err == nil {
		a.queue.Add(key)
	}
}

// processNext hands the next pod to its own goroutine; the queue gives a
// key to one sync at a time, so each pod has at most one worker and pods
// do not wait for each other (calls into one plugin are serialized only by
// the plugin helper, as on a real node).
func (a *Agent) processNext(ctx context.Context) bool {
	key, quit := a.queue.Get()
	if quit {
		return false
	}
	a.workers.Add(1)
	go func() {
		defer a.workers.Done()
		defer a.queue.Done(key)
		a.syncAndRequeue(ctx, key)
	}()
	return true
}

func (a *Agent) syncAndRequeue(ctx context.Context, key string) {
	requeueAfter, err := a.syncPod(ctx, key)
	switch {
	case err != nil && ctx.Err() == nil:
		klog.FromContext(ctx).V(2).Info("Pod sync failed, will retry", "pod", key, "err", err)
		a.queue.AddRateLimited(key)
	case requeueAfter > 0:
		a.queue.Forget(key)
		a.queue.AddAfter(key, requeueAfter)
	default:
		a.queue.Forget(key)
	}
}

// activePods are the pods the DRA manager must keep prepared: known to the
// agent and not finished.
func (a *Agent) activePods() []*corev1.Pod {
	a.mu.Lock()
	defer a.mu.Unlock()
	var pods []*corev1.Pod
	for _, st := range a.pods {
		if !st.finished {
			pods = append(pods, st.pod)
		}
	}
	return pods
}

// keyOfPod is the key of the pod with uid the agent runs ("" if none).
func (a *Agent) keyOfPod(uid types.UID) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	for key, st := range a.pods {
		if st.pod.UID == uid {
			return key
		}
	}
	return ""
}

// setPod records the latest pod object (activePods reads it).
func (a *Agent) setPod(st *podState, pod *corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st.pod = pod
}

// markFinished records that the pod's containers will not run again.
func (a *Agent) markFinished(st *podState, exitCode int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st.finished, st.exitCode = true, exitCode
}

func (a *Agent) state(key string, uid types.UID) (*podState, *podState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.pods[key]
	if st != nil && st.pod.UID != uid {
		delete(a.pods, key)
		a.podIPs.release(st.pod.UID)
		return nil, st
	}
	return st, nil
}

func (a *Agent) remember(key string, st *podState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pods[key] = st
}

func (a *Agent) forget(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st := a.pods[key]; st != nil {
		a.podIPs.release(st.pod.UID)
	}
	delete(a.pods, key)
}
