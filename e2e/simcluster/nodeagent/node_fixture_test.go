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
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// testDriverName is the driver of the scripted plugin.
const testDriverName = "test.example.com"

// scriptedPlugin is a DRA kubelet plugin whose answers a test decides; it
// records every call. Calls are not serialized (Serialize(false)), so a test
// sees the agent's own concurrency.
type scriptedPlugin struct {
	// prepare answers one claim's NodePrepareResources (nil: success).
	prepare func(ctx context.Context, claim *resourceapi.ResourceClaim) error
	// unprepare answers one claim's NodeUnprepareResources (nil: success).
	unprepare func(ctx context.Context, claim kubeletplugin.NamespacedObject) error
	// health receives the reports the plugin streams to the kubelet.
	health chan kubeletplugin.DeviceHealthReport

	mu         sync.Mutex
	prepares   []string // claim names, in call order
	unprepares []string
}

func (p *scriptedPlugin) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := map[types.UID]kubeletplugin.PrepareResult{}
	for _, claim := range claims {
		p.mu.Lock()
		p.prepares = append(p.prepares, claim.Name)
		p.mu.Unlock()
		var err error
		if p.prepare != nil {
			err = p.prepare(ctx, claim)
		}
		if err != nil {
			out[claim.UID] = kubeletplugin.PrepareResult{Err: err}
			continue
		}
		var devices []kubeletplugin.Device
		for _, r := range claim.Status.Allocation.Devices.Results {
			devices = append(devices, kubeletplugin.Device{Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device})
		}
		out[claim.UID] = kubeletplugin.PrepareResult{Devices: devices}
	}
	return out, nil
}

func (p *scriptedPlugin) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := map[types.UID]error{}
	for _, claim := range claims {
		p.mu.Lock()
		p.unprepares = append(p.unprepares, claim.Name)
		p.mu.Unlock()
		var err error
		if p.unprepare != nil {
			err = p.unprepare(ctx, claim)
		}
		out[claim.UID] = err
	}
	return out, nil
}

func (p *scriptedPlugin) HandleError(context.Context, error, string) {}

func (p *scriptedPlugin) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	if p.health == nil {
		return kubeletplugin.ErrHealthNotSupported
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case r := <-p.health:
			select {
			case <-ctx.Done():
				return nil
			case reports <- r:
			}
		}
	}
}

func (p *scriptedPlugin) calls() (prepares, unprepares []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.prepares...), append([]string(nil), p.unprepares...)
}

// testNode is one node agent on a fake clientset with a scripted plugin.
type testNode struct {
	t      *testing.T
	ctx    context.Context
	client *fake.Clientset
	cfg    Config
	agent  *Agent
	plugin *scriptedPlugin
	// stopAgent ends the running agent's Run (as a kubelet stops).
	stopAgent func()
}

const testNodeName = "node-a"

// startTestNode runs an agent (with cfg's options) and the plugin, and waits
// until the plugin is registered with the agent's DRA manager.
func startTestNode(t *testing.T, plugin *scriptedPlugin, configure func(*Config)) *testNode {
	t.Helper()
	root, err := os.MkdirTemp("", "na") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	client := fake.NewClientset()
	cfg := Config{
		Node: &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: testNodeName},
			Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.9.1"}}},
		},
		Client: client,
		Paths:  PathsFor(root),
	}
	if configure != nil {
		configure(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	n := &testNode{t: t, ctx: ctx, client: client, cfg: cfg, plugin: plugin}
	n.runAgent()
	pluginDir := cfg.Paths.Plugins + "/" + testDriverName
	if err := os.MkdirAll(pluginDir, 0o750); err != nil {
		t.Fatal(err)
	}
	helper, err := kubeletplugin.Start(ctx, plugin,
		kubeletplugin.DriverName(testDriverName),
		kubeletplugin.NodeName(testNodeName),
		kubeletplugin.KubeClient(client),
		kubeletplugin.RegistrarDirectoryPath(cfg.Paths.PluginsRegistry),
		kubeletplugin.PluginDataDirectoryPath(pluginDir),
		kubeletplugin.Serialize(false),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(helper.Stop)
	n.eventually("the plugin registers", 10*time.Second, func() bool { return helper.RegistrationStatus() != nil && helper.RegistrationStatus().PluginRegistered })
	return n
}

// runAgent starts a node agent on the node's paths and waits until it is
// ready; a second call after stopAgent is the kubelet restarting.
func (n *testNode) runAgent() {
	n.t.Helper()
	agent, err := New(n.cfg)
	if err != nil {
		n.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(n.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := agent.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			n.t.Errorf("agent: %v", err)
		}
	}()
	stopped := false
	n.stopAgent = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	n.t.Cleanup(func() {
		n.stopAgent()
		agent.StopContainers()
	})
	n.agent = agent
	select {
	case <-agent.Ready():
	case <-time.After(10 * time.Second):
		n.t.Fatal("agent not ready")
	}
}

// eventually polls cond until it holds or the timeout passes.
func (n *testNode) eventually(what string, timeout time.Duration, cond func() bool) {
	n.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			n.t.Fatalf("timed out after %v waiting until %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// createPodWithClaim creates an allocated claim reserved for a pod on the
// node and the pod using it; restart is the pod's restart policy.
func (n *testNode) createPodWithClaim(name string, restart corev1.RestartPolicy) *corev1.Pod {
	n.t.Helper()
	podUID := types.UID("pod-" + name)
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim-" + name, Namespace: "ns", UID: types.UID("claim-" + name)},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "dev", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "test"},
		}}}},
		Status: resourceapi.ResourceClaimStatus{
			Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
				{Request: "dev", Driver: testDriverName, Pool: testNodeName, Device: "dev-" + name},
			}}},
			ReservedFor: []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: name, UID: podUID}},
		},
	}
	if _, err := n.client.ResourceV1().ResourceClaims("ns").Create(n.ctx, claim, metav1.CreateOptions{}); err != nil {
		n.t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: podUID},
		Spec: corev1.PodSpec{
			NodeName:       testNodeName,
			RestartPolicy:  restart,
			ResourceClaims: []corev1.PodResourceClaim{{Name: "dev", ResourceClaimName: &claim.Name}},
			Containers: []corev1.Container{{
				Name: "main", Image: "busybox",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "dev"}}},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	created, err := n.client.CoreV1().Pods("ns").Create(n.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		n.t.Fatal(err)
	}
	return created
}

// pod is the pod as the API has it (nil once it is gone).
func (n *testNode) pod(name string) *corev1.Pod {
	p, err := n.client.CoreV1().Pods("ns").Get(n.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return p
}

func (n *testNode) phase(name string) corev1.PodPhase {
	if p := n.pod(name); p != nil {
		return p.Status.Phase
	}
	return ""
}

func count(names []string, name string) int {
	c := 0
	for _, n := range names {
		if n == name {
			c++
		}
	}
	return c
}
