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
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/cmd/internal/clustercli"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
	"github.com/computedomain-operator/computedomain-operator/kubeletplugin/gpu"
)

// schedVariant is one kind of node and claim of the scheduler benchmark.
type schedVariant struct {
	profile       string // mock NVML profile of every node
	partitionable bool   // the plugin's --partitionable-mig
	deviceClass   string // of each pod's one-device claim
	deviceType    string // the minimal slices' one attribute
}

var schedVariants = map[string]schedVariant{
	"gpu":               {profile: "gb200-nvl72", deviceClass: "gpu.nvidia.com", deviceType: cdv1beta1.DeviceTypeGpu},
	"mig":               {profile: "a100-40gb-mig", deviceClass: "mig.nvidia.com", deviceType: cdv1beta1.DeviceTypeMig},
	"mig-partitionable": {profile: "a100-40gb-mig", partitionable: true, deviceClass: "mig.nvidia.com", deviceType: cdv1beta1.DeviceTypeMig},
}

// The slice sets a variant is measured with: the GPU plugin's own slices, and as many devices of the same
// names with one attribute each (no capacities, no counters).
const (
	slicesPlugin = "plugin"
	// slicesNVIDIA are our slices with only the attributes NVIDIA's driver publishes for the same device
	// (without ours: cliqueID, resource.kubernetes.io/numaNode, and pciBusID on MIG devices): what the
	// compatibility promise costs on its own.
	slicesNVIDIA  = "nvidia"
	slicesMinimal = "minimal"
)

// sliceSetNames are the slice sets each run measures, in the first run's order.
var sliceSetNames = []string{slicesPlugin, slicesNVIDIA, slicesMinimal}

// schedBenchOptions are bench scheduler's flags.
type schedBenchOptions struct {
	nodes, pods, runs, workers int
	variants                   []string
	timeout                    time.Duration
	dir                        string
	cpuProfile                 string
}

// schedRun is one measurement: a backlog of pods scheduled by a fresh kube-scheduler.
type schedRun struct {
	variant, slices string
	pods            int
	// sinceStart is scheduler start → last pod bound; firstToLast first → last pod bound.
	sinceStart, firstToLast time.Duration
}

// podsPerSecond is the scheduling throughput once the scheduler binds pods: (pods-1) / first→last bind.
func (r schedRun) podsPerSecond() float64 {
	if r.pods < 2 || r.firstToLast <= 0 {
		return 0
	}
	return float64(r.pods-1) / r.firstToLast.Seconds()
}

// sliceSetStats describe one published slice set.
type sliceSetStats struct {
	slices, devices, attributes, capacities, counterSets, jsonBytes int
}

func runScheduler(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench scheduler", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o schedBenchOptions
	variants := fs.String("variants", "gpu,mig", "comma-separated node and claim kinds: "+strings.Join(sortedKeys(schedVariants), ", "))
	fs.IntVar(&o.nodes, "nodes", 500, "Node objects, each with the ResourceSlices of one node of the variant's profile (gb200-nvl72: 4 GPUs; a100-40gb-mig: 8 MIG-enabled GPUs)")
	fs.IntVar(&o.pods, "pods", 1000, "pods per measurement, each with a claim of one device from a ResourceClaimTemplate")
	fs.IntVar(&o.runs, "runs", 1, "measurements of each slice set per variant (alternating which set goes first)")
	fs.IntVar(&o.workers, "workers", 16, "parallel API calls when writing nodes, slices and pods")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "longest wait for one measurement's pods to be bound")
	fs.StringVar(&o.dir, "dir", "", "directory for etcd data (default: a temporary directory, removed on exit)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the first measurement of our plugin's slices (scheduler start → last pod bound) to this file")
	verbosity := fs.Int("v", 0, "log verbosity of the benchmark itself")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.variants = strings.Split(*variants, ",")
	for _, v := range o.variants {
		if _, ok := schedVariants[v]; !ok {
			return fmt.Errorf("--variants: %q, allowed values: %s", v, strings.Join(sortedKeys(schedVariants), ", "))
		}
	}
	switch {
	case o.nodes < 1:
		return fmt.Errorf("--nodes %d: must be at least 1", o.nodes)
	case o.pods < 2:
		return fmt.Errorf("--pods %d: must be at least 2", o.pods)
	case o.runs < 1:
		return fmt.Errorf("--runs %d: must be at least 1", o.runs)
	case o.workers < 1:
		return fmt.Errorf("--workers %d: must be at least 1", o.workers)
	}
	ctx = clustercli.WithLogger(ctx, clustercli.NewLogger(*verbosity, stderr))
	runs, stats, err := benchScheduler(ctx, o, stderr)
	if err != nil {
		return err
	}
	printSchedulerTable(stdout, o, runs, stats)
	return nil
}

// benchScheduler measures, for each variant and run, every slice set on a control plane of its own: start
// etcd, kube-apiserver and the ResourceClaim controller, write the device classes and nodes, publish the set,
// create the pods (the ResourceClaim controller makes their claims), start kube-scheduler, time the binds,
// stop everything. A fresh control plane per measurement keeps one measurement's garbage (the API server's
// watch caches of deleted pods and claims, a grown heap) out of the next one's figures.
func benchScheduler(ctx context.Context, o schedBenchOptions, progress io.Writer) ([]schedRun, map[string]sliceSetStats, error) {
	var runs []schedRun
	stats := map[string]sliceSetStats{}
	b := schedBench{o: o, progress: progress}
	for _, name := range o.variants {
		v := schedVariants[name]
		sets, err := b.sliceSets(ctx, v)
		if err != nil {
			return nil, nil, fmt.Errorf("variant %s: %w", name, err)
		}
		for set, s := range sets {
			stats[name+"/"+set] = describeSlices(s)
		}
		for i := range o.runs {
			// Rotate which set goes first, so that no set always runs on a machine just warmed (or heated) by another.
			order := slices.Clone(sliceSetNames)
			for range i % len(order) {
				order = append(order[1:], order[0])
			}
			for _, set := range order {
				r, err := b.measureOnFreshControlPlane(ctx, name, v, set, sets[set], fmt.Sprintf("%s-%s-%d", name, set, i))
				if err != nil {
					return nil, nil, fmt.Errorf("variant %s, %s slices, run %d: %w", name, set, i+1, err)
				}
				_, _ = fmt.Fprintf(progress, "%s, %s slices, run %d: %d pods bound in %.2fs after the scheduler started, %.1f pods/s\n",
					name, set, i+1, r.pods, r.sinceStart.Seconds(), r.podsPerSecond())
				runs = append(runs, r)
			}
		}
	}
	return runs, stats, nil
}

// measureOnFreshControlPlane is one measurement on a control plane started for it and stopped after it.
func (b *schedBench) measureOnFreshControlPlane(ctx context.Context, variant string, v schedVariant, set string, sliceSet []*resourcev1.ResourceSlice, ns string) (schedRun, error) {
	// What the previous measurement left on the heap is not this one's to collect.
	runtime.GC()
	debug.FreeOSMemory()
	started := time.Now()
	cp, err := simcluster.StartControlPlane(ctx, simcluster.ControlPlaneConfig{Dir: b.o.dir, Controllers: []string{"resourceclaim-controller"}})
	if err != nil {
		return schedRun{}, fmt.Errorf("start control plane: %w", err)
	}
	defer cp.Stop()
	b.cp, b.client = cp, cp.Client()
	if err := b.createDeviceClasses(ctx); err != nil {
		return schedRun{}, err
	}
	if err := b.createNodes(ctx); err != nil {
		return schedRun{}, err
	}
	_, _ = fmt.Fprintf(b.progress, "control plane and %d nodes ready in %.1fs\n", b.o.nodes, time.Since(started).Seconds())
	return b.measure(ctx, variant, v, set, sliceSet, ns)
}

type schedBench struct {
	o        schedBenchOptions
	client   kubernetes.Interface
	cp       *simcluster.ControlPlane
	progress io.Writer
	profiled bool
}

func (b *schedBench) nodeName(i int) string { return fmt.Sprintf("n-%04d", i) }

// createDeviceClasses creates the chart's gpu.nvidia.com and mig.nvidia.com classes (same selectors).
func (b *schedBench) createDeviceClasses(ctx context.Context) error {
	for name, typ := range map[string]string{"gpu.nvidia.com": cdv1beta1.DeviceTypeGpu, "mig.nvidia.com": cdv1beta1.DeviceTypeMig} {
		dc := &resourcev1.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
				Expression: fmt.Sprintf("device.driver == '%s' && device.attributes['%s'].type == '%s'", cdv1beta1.GPUDriverName, cdv1beta1.GPUDriverName, typ),
			}}}},
		}
		if _, err := b.client.ResourceV1().DeviceClasses().Create(ctx, dc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create DeviceClass %s: %w", name, err)
		}
	}
	return nil
}

// createNodes writes the Node objects, Ready and without the not-ready taint the API server's admission
// puts on a new node (no node lifecycle controller runs to remove it).
func (b *schedBench) createNodes(ctx context.Context) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("144"),
		corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return parallel(ctx, b.o.nodes, b.o.workers, func(i int) error {
		name := b.nodeName(i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
			Status: corev1.NodeStatus{
				Capacity: capacity, Allocatable: capacity,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
			},
		}
		created, err := b.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create node %s: %w", name, err)
		}
		if len(created.Spec.Taints) > 0 {
			created.Spec.Taints = nil
			if _, err := b.client.CoreV1().Nodes().Update(ctx, created, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("untaint node %s: %w", name, err)
			}
		}
		return nil
	})
}

// sliceSets builds both slice sets of a variant: the GPU plugin's own (kubeletplugin/gpu's BuildResources
// of the inventory it discovers from each node's mock NVML, 18 nodes per NVLink clique) and, slice for
// slice, the same devices with only their type attribute.
func (b *schedBench) sliceSets(ctx context.Context, v schedVariant) (map[string][]*resourcev1.ResourceSlice, error) {
	profile, err := mock.LoadProfile(v.profile)
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "bsh")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(root) }()
	// Every node of a profile has the same PCI layout: one host root serves all.
	if _, err := hostroot.Fake(root, profile.FakeHostRootSpec("n")); err != nil {
		return nil, err
	}
	migMode := mock.MIGStatic
	if v.partitionable {
		migMode = mock.MIGDynamic
	}
	sets := map[string][]*resourcev1.ResourceSlice{}
	for i := range b.o.nodes {
		name := b.nodeName(i)
		lib, err := mock.New(mock.Config{NodeName: name, Profile: v.profile, Cluster: "bench", Rack: i / 18, MIG: migMode})
		if err != nil {
			return nil, err
		}
		if r := lib.Init(); r != nvml.SUCCESS {
			return nil, fmt.Errorf("node %s: mock NVML init: %w", name, r)
		}
		inv, err := gpu.DiscoverInventory(ctx, lib, root)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
		_ = lib.Shutdown()
		res := gpu.BuildResources(inv, gpu.PublishOptions{PoolName: name, PartitionableMIG: v.partitionable})
		ours := gpu.ResourceSlices(cdv1beta1.GPUDriverName, name, res)
		sets[slicesPlugin] = append(sets[slicesPlugin], ours...)
		sets[slicesNVIDIA] = append(sets[slicesNVIDIA], nvidiaAttributesOnly(ours)...)
		sets[slicesMinimal] = append(sets[slicesMinimal], minimalSlices(ours, v.deviceType)...)
	}
	return sets, nil
}

// minimalSlices mirrors a node's device slices with one attribute per device (type) and nothing else.
func minimalSlices(ours []*resourcev1.ResourceSlice, deviceType string) []*resourcev1.ResourceSlice {
	var out []*resourcev1.ResourceSlice
	for _, s := range ours {
		if len(s.Spec.Devices) > 0 {
			out = append(out, s)
		}
	}
	for i, s := range out {
		m := &resourcev1.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("min-%d-%s", i, *s.Spec.NodeName)},
			Spec: resourcev1.ResourceSliceSpec{
				Driver:   s.Spec.Driver,
				Pool:     resourcev1.ResourcePool{Name: s.Spec.Pool.Name, Generation: s.Spec.Pool.Generation, ResourceSliceCount: int64(len(out))},
				NodeName: s.Spec.NodeName,
			},
		}
		for _, d := range s.Spec.Devices {
			m.Spec.Devices = append(m.Spec.Devices, resourcev1.Device{
				Name:       d.Name,
				Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"type": {StringValue: ptr.To(deviceType)}},
			})
		}
		out[i] = m
	}
	return out
}

// nvidiaAttributesOnly copies a node's slices keeping, on each device, only the attribute names NVIDIA's
// driver publishes on that kind of device (full GPU or MIG device).
func nvidiaAttributesOnly(ours []*resourcev1.ResourceSlice) []*resourcev1.ResourceSlice {
	out := make([]*resourcev1.ResourceSlice, len(ours))
	for i, s := range ours {
		s = s.DeepCopy()
		s.Name = "nv-" + s.Name
		for j := range s.Spec.Devices {
			d := &s.Spec.Devices[j]
			mig := d.Attributes["type"].StringValue != nil && *d.Attributes["type"].StringValue == cdv1beta1.DeviceTypeMig
			for name := range d.Attributes {
				if !nvidiaAttribute(name, mig) {
					delete(d.Attributes, name)
				}
			}
		}
		out[i] = s
	}
	return out
}

// nvidiaAttribute says whether NVIDIA's GPU kubelet plugin (v0.5) publishes an attribute of this name on a
// full GPU or on a MIG device.
func nvidiaAttribute(name resourcev1.QualifiedName, mig bool) bool {
	switch name {
	case "type", "uuid", "productName", "brand", "architecture", "cudaComputeCapability", "driverVersion",
		"cudaDriverVersion", "addressingMode", "resource.kubernetes.io/pcieRoot":
		return true
	case "parentUUID", "profile":
		return mig
	case "resource.kubernetes.io/pciBusID":
		return !mig
	}
	return false
}

func describeSlices(set []*resourcev1.ResourceSlice) sliceSetStats {
	var st sliceSetStats
	for _, s := range set {
		st.slices++
		st.counterSets += len(s.Spec.SharedCounters)
		for _, d := range s.Spec.Devices {
			st.devices++
			st.attributes += len(d.Attributes)
			st.capacities += len(d.Capacity)
		}
		if data, err := json.Marshal(s); err == nil {
			st.jsonBytes += len(data)
		}
	}
	return st
}

// measure publishes one slice set, creates the pods and their claims, then times a fresh scheduler
// binding them all, and cleans up.
func (b *schedBench) measure(ctx context.Context, variant string, v schedVariant, set string, sliceSet []*resourcev1.ResourceSlice, ns string) (schedRun, error) {
	if err := parallel(ctx, len(sliceSet), b.o.workers, func(i int) error {
		s := sliceSet[i].DeepCopy()
		s.ResourceVersion = ""
		_, err := b.client.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{})
		return err
	}); err != nil {
		return schedRun{}, fmt.Errorf("publish slices: %w", err)
	}
	if err := b.createPods(ctx, ns, v.deviceClass); err != nil {
		return schedRun{}, err
	}
	binds, stopWatch, err := b.watchBinds(ctx, ns)
	if err != nil {
		return schedRun{}, err
	}
	defer stopWatch()

	stopProfile := func() {}
	if set == slicesPlugin && !b.profiled && b.o.cpuProfile != "" {
		b.profiled = true
		if stopProfile, err = clustercli.StartCPUProfile(b.o.cpuProfile); err != nil {
			return schedRun{}, err
		}
	}
	start := time.Now()
	stopScheduler, err := b.cp.StartScheduler(ctx)
	if err != nil {
		stopProfile()
		return schedRun{}, err
	}
	times, waitErr := binds.wait(ctx, b.o.pods, b.o.timeout)
	stopProfile()
	if err := stopScheduler(); err != nil {
		return schedRun{}, errors.Join(waitErr, err)
	}
	if waitErr != nil {
		return schedRun{}, waitErr
	}
	if err := b.checkAllocated(ctx, ns); err != nil {
		return schedRun{}, err
	}
	if err := b.cleanup(ctx, ns); err != nil {
		return schedRun{}, err
	}
	return schedRun{variant: variant, slices: set, pods: len(times), sinceStart: times[len(times)-1].Sub(start), firstToLast: times[len(times)-1].Sub(times[0])}, nil
}

// createPods creates the namespace, a one-device claim template and the pods, and waits until the
// ResourceClaim controller has made every pod's claim.
func (b *schedBench) createPods(ctx context.Context, ns, deviceClass string) error {
	if _, err := b.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	tmpl := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "one-device", Namespace: ns},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "dev", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: deviceClass}}},
		}}},
	}
	if _, err := b.client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := parallel(ctx, b.o.pods, b.o.workers, func(i int) error {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%05d", i), Namespace: ns},
			Spec: corev1.PodSpec{
				Containers:                    []corev1.Container{{Name: "c", Image: "bench", Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "dev"}}}}},
				ResourceClaims:                []corev1.PodResourceClaim{{Name: "dev", ResourceClaimTemplateName: ptr.To("one-device")}},
				TerminationGracePeriodSeconds: ptr.To[int64](0),
			},
		}
		_, err := b.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("create pods: %w", err)
	}
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, b.o.timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := b.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		withClaim := 0
		for _, p := range pods.Items {
			if len(p.Status.ResourceClaimStatuses) == 1 && p.Status.ResourceClaimStatuses[0].ResourceClaimName != nil {
				withClaim++
			}
		}
		return withClaim == b.o.pods, nil
	})
}

// bindTimes records when each pod of a namespace was seen bound.
type bindTimes struct {
	mu    sync.Mutex
	seen  map[string]bool
	times []time.Time
	grew  chan struct{}
}

func (t *bindTimes) observe(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen[pod.Name] {
		return
	}
	t.seen[pod.Name] = true
	t.times = append(t.times, time.Now())
	select {
	case t.grew <- struct{}{}:
	default:
	}
}

// wait returns the bind times once n pods are bound.
func (t *bindTimes) wait(ctx context.Context, n int, timeout time.Duration) ([]time.Time, error) {
	deadline := time.After(timeout)
	for {
		t.mu.Lock()
		got := len(t.times)
		if got >= n {
			out := slices.Clone(t.times)
			t.mu.Unlock()
			return out, nil
		}
		t.mu.Unlock()
		select {
		case <-t.grew:
		case <-time.After(time.Second):
		case <-deadline:
			return nil, fmt.Errorf("%d of %d pods bound after %s", got, n, timeout)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (b *schedBench) watchBinds(ctx context.Context, ns string) (*bindTimes, func(), error) {
	t := &bindTimes{seen: map[string]bool{}, grew: make(chan struct{}, 1)}
	factory := informers.NewSharedInformerFactoryWithOptions(b.client, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    t.observe,
		UpdateFunc: func(_, obj any) { t.observe(obj) },
	}); err != nil {
		return nil, nil, err
	}
	watchCtx, cancel := context.WithCancel(ctx)
	factory.Start(watchCtx.Done())
	if !cache.WaitForCacheSync(watchCtx.Done(), inf.HasSynced) {
		cancel()
		return nil, nil, errors.New("pod informer did not sync")
	}
	return t, func() { cancel(); factory.Shutdown() }, nil
}

// checkAllocated fails unless every claim of the namespace is allocated and reserved for its pod.
func (b *schedBench) checkAllocated(ctx context.Context, ns string) error {
	claims, err := b.client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	allocated := 0
	for _, c := range claims.Items {
		if c.Status.Allocation != nil && len(c.Status.Allocation.Devices.Results) == 1 && len(c.Status.ReservedFor) == 1 {
			allocated++
		}
	}
	if allocated != b.o.pods {
		return fmt.Errorf("%d of %d claims allocated and reserved", allocated, b.o.pods)
	}
	return nil
}

// cleanup deletes the pods (at once: no kubelet runs them), their claims and every slice, and waits until
// the claims are gone, so that the next measurement starts from free devices.
func (b *schedBench) cleanup(ctx context.Context, ns string) error {
	now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	if err := b.client.CoreV1().Pods(ns).DeleteCollection(ctx, now, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("delete pods: %w", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, b.o.timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := b.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) > 0 {
			return false, nil
		}
		if err := b.client.ResourceV1().ResourceClaims(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			return false, nil
		}
		claims, err := b.client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(claims.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("wait for the pods and claims of %s to be gone: %w", ns, err)
	}
	if err := b.client.ResourceV1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("delete slices: %w", err)
	}
	return nil
}

func printSchedulerTable(w io.Writer, o schedBenchOptions, runs []schedRun, stats map[string]sliceSetStats) {
	_, _ = fmt.Fprintf(w, "\nscheduler throughput on a backlog of %d one-device pods, %d nodes, %d run(s) per slice set (median)\n\n", o.pods, o.nodes, o.runs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "VARIANT\tSLICES\tSLICE OBJECTS\tDEVICES\tATTRIBUTES\tCAPACITIES\tCOUNTER SETS\tJSON\tPODS/S\tRUNS\tSTART→LAST BIND\tRATIO")
	for _, variant := range o.variants {
		// Per-run ratios: our slices over the minimal set's of the same run.
		byRun := map[string][]schedRun{}
		perSet := map[string][]float64{}
		for _, r := range runs {
			if r.variant == variant {
				byRun[r.slices] = append(byRun[r.slices], r)
				perSet[r.slices] = append(perSet[r.slices], r.podsPerSecond())
			}
		}
		ratios := map[string][]float64{}
		for _, set := range []string{slicesPlugin, slicesNVIDIA} {
			for i := range min(len(byRun[set]), len(byRun[slicesMinimal])) {
				if m := byRun[slicesMinimal][i].podsPerSecond(); m > 0 {
					ratios[set] = append(ratios[set], byRun[set][i].podsPerSecond()/m)
				}
			}
		}
		for _, set := range sliceSetNames {
			st := stats[variant+"/"+set]
			var starts []float64
			for _, r := range byRun[set] {
				starts = append(starts, r.sinceStart.Seconds())
			}
			ratio := ""
			if r := ratios[set]; len(r) > 0 {
				ratio = fmt.Sprintf("%.2f (%s)", median(r), joinFloats(r, "%.2f", ", "))
			}
			_, _ = fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%.1f MB\t%.1f\t%s\t%.2fs\t%s\n", variant, set, st.slices, st.devices, st.attributes, st.capacities, st.counterSets,
				float64(st.jsonBytes)/1e6, median(perSet[set]), joinFloats(perSet[set], "%.1f", ", "), median(starts), ratio)
		}
	}
	_ = tw.Flush()
	_, _ = fmt.Fprintln(w, "\nPODS/S: (pods-1) / first→last bind; RATIO: the set's pods/s over the minimal set's, per run (median and each run); every measurement on a fresh control plane (goal: plugin ≥ 0.95)")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
